"""Quantities in integer milli-units through the Kubernetes client's parser; resource names."""

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
    ],
)
def test_milli(text, want) -> None:
    assert milli(text) == want


@pytest.mark.parametrize("text", ["two", "1 core", "", "--1", "1Qi"])
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
