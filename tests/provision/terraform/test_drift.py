"""The day-one rehearsal's second plan classified (provision/terraform/drift.py): each case of
data/drift_cases.yaml draws exactly its drift, its stale entries and its accepted paths; the repository's drift list
loads, each entry with its reason."""

from __future__ import annotations

import pytest

from clusterspec.errors import UserError
from provision.terraform import drift, rehearsal
from tests.provision.terraform.conftest import DATA
from tests.support import load_yaml

CASES = load_yaml(DATA / "drift_cases.yaml")


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case_draws_its_verdict(case) -> None:
    entries = [drift.Entry(e["address"], e["attribute"], e["gap"]) for e in case["entries"]]
    left_out = [rehearsal.Entry(a, "moto gap") for a in case.get("left_out", [])]
    plans = {root: {"resource_changes": changes} for root, changes in case["plans"].items()}
    verdict = drift.classify(plans, entries, left_out)
    want = case["expect"]
    assert verdict.drift == want["drift"]
    assert [f"{e.address} {e.attribute}" for e in verdict.stale] == want["stale"]
    assert [hit for hits in verdict.accepted.values() for hit in hits] == want["accepted"]
    assert verdict.converged == (not want["drift"] and not want["stale"])
    assert len(verdict.problems()) == len(want["drift"]) + len(want["stale"])


def test_the_repository_list_loads_each_entry_with_its_gap() -> None:
    entries = drift.load()
    assert all(e.gap and e.address and e.attribute for e in entries)
    assert len({(e.address, e.attribute) for e in entries}) == len(entries)


@pytest.mark.parametrize(
    "text",
    ["- {address: a, attribute: b}", "- {address: a, attribute: '', gap: c}", "- a", "{a: b}"],
)
def test_a_malformed_list_is_one_line(tmp_path, text) -> None:
    path = tmp_path / "drift.yaml"
    path.write_text(text)
    with pytest.raises(UserError) as e:
        drift.load(path)
    assert len(e.value.lines) == 1 and str(path) in e.value.lines[0]
