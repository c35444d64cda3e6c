"""Patch semantics and selector parsing, as cases in data files."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from autoscaler.emulator.patch import apply_patch
from autoscaler.emulator.selectors import BadRequest, parse_field_selector, parse_label_selector
from autoscaler.model.store import StoreError
from tests.support import load_yaml

HERE = Path(__file__).parent
PATCHES = load_yaml(HERE / "patch_cases.yaml")
SELECTORS = load_yaml(HERE / "selector_cases.yaml")


@pytest.mark.parametrize("case", PATCHES, ids=[c["name"] for c in PATCHES])
def test_patch(case):
    original = yaml.safe_load(yaml.safe_dump(case["object"]))
    if "error" in case:
        with pytest.raises(StoreError) as err:
            apply_patch(case["object"], case["patch"], case["type"])
        assert err.value.reason == case["error"]
    else:
        assert apply_patch(case["object"], case["patch"], case["type"]) == case["expect"]
    assert case["object"] == original, "the stored object is never modified in place"


@pytest.mark.parametrize("case", SELECTORS, ids=[c["selector"] or "empty" for c in SELECTORS])
def test_label_selector(case):
    matches = parse_label_selector(case["selector"])
    assert all(matches(labels) for labels in case["match"])
    assert not any(matches(labels) for labels in case["reject"])


@pytest.mark.parametrize("text", ["app in (a", "=x", "a b"])
def test_malformed_label_selector_is_a_bad_request(text):
    with pytest.raises(BadRequest):
        parse_label_selector(text)


def test_field_selector_on_pod_fields():
    pod = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"nodeName": "n1"},
        "status": {"phase": "Running"},
    }
    assert parse_field_selector("spec.nodeName=n1,status.phase!=Succeeded,metadata.namespace=ns")(pod)
    assert not parse_field_selector("metadata.name=q")(pod)
    assert parse_field_selector("spec.schedulerName=default-scheduler")(
        {**pod, "spec": {"schedulerName": "default-scheduler"}}
    )
    with pytest.raises(BadRequest, match="field label not supported: spec.priority"):
        parse_field_selector(
            "spec.priority=1"
        )  # the pod registry's field labels (pod strategy ToSelectableFields)
    with pytest.raises(BadRequest, match="not supported"):
        parse_field_selector("spec.nodeName=n1", "configmaps")
