from pathlib import Path

import pytest

from autoscaler.adapters import failures
from tests.support import load_yaml

CASES = load_yaml(Path(__file__).parent / "scaling_failures.yaml")


@pytest.mark.parametrize("case", CASES, ids=[c["reason"] + f"-{i}" for i, c in enumerate(CASES)])
def test_classify(case):
    assert failures.classify(case["message"]) == case["reason"]


@pytest.mark.parametrize(
    ("description", "missing"),
    [
        ("Launching 3 new EC2 instances. Status Reason: ...", 3),
        ("Launching a new EC2 instance. Status Reason: ...", 1),
        ("", 1),
    ],
)
def test_missing_instances(description, missing):
    assert failures.missing_instances(description) == missing
