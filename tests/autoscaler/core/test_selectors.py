"""The one selector parser: label key and value rules (apimachinery validation) and the text form of label
selectors (apimachinery labels.Parse), which the emulator's ?labelSelector= uses too."""

from __future__ import annotations

import pytest

from autoscaler.core.selectors import (
    label_key_problem,
    label_value_problem,
    parse_int64,
    parse_selector_text,
    selector_matches,
)
from autoscaler.emulator.selectors import BadRequest, parse_label_selector


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
        ("cores>-1", {"cores": "0"}, True),
        (
            "cores>8",
            {"cores": "--16"},
            False,
        ),  # not an integer label: neither Gt nor Lt holds (strconv.ParseInt)
        ("", {"anything": "x"}, True),
    ],
)
def test_text_selectors(text, labels, match) -> None:
    assert selector_matches(parse_selector_text(text), labels) is match
    assert parse_label_selector(text)(labels) is match


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
    ],
)
def test_malformed_text_selectors(text) -> None:
    with pytest.raises(ValueError):
        parse_selector_text(text)
    with pytest.raises(BadRequest):
        parse_label_selector(text)


@pytest.mark.parametrize(
    ("text", "value"),
    [("5", 5), ("-5", -5), ("+5", 5), ("9223372036854775807", 2**63 - 1), ("--5", None), ("5-", None),
     ("9223372036854775808", None), ("٣", None), ("", None), (" 5", None), ("5.0", None)],
)  # fmt: skip
def test_gt_lt_values_are_go_int64s(text, value) -> None:
    """What strconv.ParseInt(text, 10, 64) reads: a Gt/Lt value and the label it is compared with."""
    assert parse_int64(text) == value
