"""Quantities in integer milli-units by Kubernetes' grammar (apimachinery resource.ParseQuantity); resource names."""

from __future__ import annotations

import pytest

from autoscaler.core.quantity import QuantityError, check_resource_name, format_amount, milli


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("7900m", 7900),
        ("2", 2000),
        ("1Gi", 2**30 * 1000),
        ("1.5", 1500),
        ("1e3", 1_000_000),
        ("0.1m", 1),
        (8, 8000),
        (".5", 500),
        ("5.", 5000),
        ("+1", 1000),
        ("1E", 10**21),  # E is the exa suffix; E3 an exponent
        ("1E3", 1_000_000),
        ("1e-3", 1),
        ("100n", 1),
        ("1u", 1),
        ("1Ei", 2**60 * 1000),
        (0.25, 250),
    ],
)
def test_milli(text, want) -> None:
    assert milli(text) == want


@pytest.mark.parametrize(
    "text",
    [
        "two",
        "1 core",
        "",
        "--1",
        "1Qi",
        # refused by resource.ParseQuantity, accepted by the Kubernetes Python client's parser (Decimal):
        "NaN",
        "Infinity",
        "inf",
        "1_000",
        "2K",  # the kilo suffix is a lowercase k
        "1e3Mi",  # an exponent and a suffix
        "1e1.5",
        " 1",
        "1.5.2",
        "\uff11",  # a full-width digit
        float("nan"),
        float("inf"),
        # beyond an int64 Value()
        "1e400",
        "1e19",
        "99999999999999999999",
        1e20,
    ],
)
def test_bad_quantities(text) -> None:
    with pytest.raises(QuantityError):
        milli(text)


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("cpu", True),
        ("nvidia.com/gpu", True),
        ("hugepages-2Mi", True),
        ("example.com/fpga", True),
        ("gpu", False),
        ("nvidia.com/", False),
        ("GPU/x", False),
    ],
)
def test_resource_names(name, ok) -> None:
    assert (check_resource_name(name) is None) == ok


def test_format_amount() -> None:
    assert format_amount("cpu", 2500) == "2.5"
    assert format_amount("memory", 16 * 2**30 * 1000) == "16Gi"
    assert format_amount("nvidia.com/gpu", 8000) == "8"


def test_huge_exponent_is_refused_without_building_the_number() -> None:
    with pytest.raises(QuantityError, match="out of range"):
        milli("1e999999999")


def test_model_parser_is_the_core_parser() -> None:
    from simulator.model.quantity import parse_quantity

    assert parse_quantity("1500m") == 1.5
    for bad in ("NaN", "2K", "1_0"):
        with pytest.raises(ValueError):
            parse_quantity(bad)
