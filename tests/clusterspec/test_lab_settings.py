"""The settings document `lab` reads from the cluster: built from the spec, read back whole, and a document it does
not understand refused with one line naming the field."""

from __future__ import annotations

import pytest
import yaml

from clusterspec import lab_settings
from clusterspec.loader import load_spec


def _doc() -> dict:
    return lab_settings.from_spec(
        load_spec(), registry="123.dkr.ecr.us-west-2.amazonaws.com", code_bucket="b"
    )


def test_round_trip_through_yaml() -> None:
    s = lab_settings.parse(yaml.safe_load(yaml.safe_dump(_doc())))
    assert s.cluster == "dlr" and s.code_bucket == "b" and s.users == {"alice": 2001, "bob": 2002}
    assert s.standard_image == "123.dkr.ecr.us-west-2.amazonaws.com/dlr/standard:1-cuda12.9-py3.11"
    assert s.gang_scheduler == "research-gang-scheduler"
    a100 = [t for t in s.node_types if t.gpu_model == "A100"]
    assert {t.where for t in a100} == {"us-west-2", "us-east-1", "us-east-2"} and {t.efa for t in a100} == {4}
    titans = [t for t in s.node_types if t.kind == "server"]
    assert [t.name for t in titans] == ["titan-01", "titan-02", "titan-03", "titan-04"]
    spot = [t for t in s.node_types if t.spot]
    assert spot and all(("research.cluster/spot", "true", "NoSchedule") in t.taints for t in spot)
    assert s.ssh_machines[0] == ("dlr-gpu-1", "gpu-1.ssh.research.internal")


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda d: d.pop("users"), "users: missing"),
        (
            lambda d: d.update(version=2),
            "version: 2; this lab reads version 1 (pip install -U the lab client)",
        ),
        (lambda d: d["node_types"][0].update(gpus="8"), "node_types[0].gpus: str '8', expected int"),
        (lambda d: d["users"].update(carol="x"), "users.carol: 'x', expected a uid (integer)"),
    ],
)
def test_a_document_lab_cannot_use_is_one_line(edit, message) -> None:
    doc = _doc()
    edit(doc)
    with pytest.raises(lab_settings.SettingsError) as e:
        lab_settings.parse(doc)
    assert str(e.value) == message
