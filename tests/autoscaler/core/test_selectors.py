"""The one selector parser: label key and value rules (apimachinery validation) and the text form of label
selectors (apimachinery labels.Parse), checked against the real kube-apiserver's ?labelSelector= (the shared
control plane of the run): it matches the same objects and refuses the same texts (HTTP 400)."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from autoscaler.adapters.kubernetes import api_client
from autoscaler.core.selectors import (
    label_key_problem,
    label_value_problem,
    parse_int64,
    parse_selector_text,
    selector_matches,
)


@pytest.fixture(scope="module")
def api(kube):
    """The real API server, and a namespace of this module's own on it."""
    with api_client(str(kube.admin_kubeconfig)) as a:
        yield client.CoreV1Api(a), kube.namespace("selectors")


def server_matches(api, text: str, labels: dict[str, str]) -> bool:
    """Whether kube-apiserver's ``labelSelector=text`` selects a ConfigMap with ``labels``."""
    core, ns = api
    name = f"cm-{abs(hash((text, tuple(sorted(labels.items()))))):x}"[:60]
    core.create_namespaced_config_map(ns, {"metadata": {"name": name, "labels": labels}})
    try:
        found = json.loads(
            core.list_namespaced_config_map(
                ns, label_selector=text, field_selector=f"metadata.name={name}", _preload_content=False
            ).data
        )
        return [i["metadata"]["name"] for i in found["items"]] == [name]
    finally:
        core.delete_namespaced_config_map(name, ns)


@pytest.mark.parametrize(
    "key", ["app", "app.kubernetes.io/name", "nvidia.com/gpu.product", "a" * 63, "example.com/A_b-c.d"]
)
def test_valid_keys(key) -> None:
    assert label_key_problem(key) is None


@pytest.mark.parametrize(
    "key", ["", "-app", "app-", "a" * 64, "Example.com/x", "/x", "a/b/c", "x/", "sp ace", "ümlaut"]
)
def test_invalid_keys(key) -> None:
    assert label_key_problem(key)


@pytest.mark.parametrize("value", ["", "v1", "a.b_c-d", "A" * 63])
def test_valid_values(value) -> None:
    assert label_value_problem(value) is None


@pytest.mark.parametrize("value", ["-v", "v-", "a b", "a" * 64, "x/y", "$x"])
def test_invalid_values(value) -> None:
    assert label_value_problem(value)


@pytest.mark.parametrize(
    ("text", "labels", "match"),
    [
        ("app=web", {"app": "web"}, True),
        ("app==web", {"app": "web"}, True),
        ("app!=web", {}, True),  # a missing key is not equal
        ("app!=web", {"app": "web"}, False),
        ("tier in (a, b),!canary", {"tier": "b"}, True),
        ("tier in (a, b),!canary", {"tier": "b", "canary": ""}, False),
        ("tier notin (a)", {}, True),
        ("gpu", {"gpu": ""}, True),
        ("cores>8", {"cores": "16"}, True),
        ("cores<8", {"cores": "16"}, False),
        ("cores>0", {"cores": "1"}, True),
        (
            "cores>8",
            {"cores": "--16"},
            False,
        ),  # not an integer label: neither Gt nor Lt holds (strconv.ParseInt)
        ("", {"anything": "x"}, True),
    ],
)
def test_text_selectors(text, labels, match, api) -> None:
    assert selector_matches(parse_selector_text(text), labels) is match
    if all(label_value_problem(v) is None for v in labels.values()):  # an object the API server accepts
        assert server_matches(api, text, labels) is match


@pytest.mark.parametrize(
    "text",
    [
        "app=web,",
        "=web",
        "app in web",
        "app=web tier=x",
        "app=-x",
        "A_/b=c",
        "cores>x",
        "cores>--5",
        "cores<1e3",
        "cores>-1",  # an int64, but not a label value: kube-apiserver refuses it (labels.NewRequirement)
        "cores>+5",
    ],
)
def test_malformed_text_selectors(text, api) -> None:
    with pytest.raises(ValueError):
        parse_selector_text(text)
    core, ns = api
    with pytest.raises(ApiException) as refused:
        core.list_namespaced_config_map(ns, label_selector=text)
    assert refused.value.status == 400


@pytest.mark.parametrize(
    ("text", "value"),
    [("5", 5), ("-5", -5), ("+5", 5), ("9223372036854775807", 2**63 - 1), ("--5", None), ("5-", None),
     ("9223372036854775808", None), ("٣", None), ("", None), (" 5", None), ("5.0", None)],
)  # fmt: skip
def test_gt_lt_values_are_go_int64s(text, value) -> None:
    """What strconv.ParseInt(text, 10, 64) reads: a Gt/Lt value and the label it is compared with."""
    assert parse_int64(text) == value
