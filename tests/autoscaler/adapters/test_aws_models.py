"""The cut AWS models (autoscaler/adapters/aws_models.py): exactly the operations the adapter calls, each with
every shape botocore needs; the adapter's own behaviour on them is tests/autoscaler/adapters/test_aws.py."""

from __future__ import annotations

import re
from pathlib import Path

import boto3
import pytest
from botocore import xform_name

from autoscaler.adapters import aws_models

ADAPTER = Path(aws_models.__file__).with_name("aws.py").read_text()
WHOLE = boto3.Session()


def _called(service: str) -> set[str]:
    """The operations of ``service`` the adapter's source calls (as a client method or a paginator)."""
    ops = WHOLE.client(service, region_name="us-west-2").meta.service_model.operation_names
    return {
        op
        for op in ops
        if re.search(rf"\.{xform_name(op)}\(", ADAPTER) or f'get_paginator("{xform_name(op)}")' in ADAPTER
    }


@pytest.mark.parametrize("service", sorted(aws_models.OPERATIONS))
def test_the_list_is_what_the_adapter_calls(service):
    assert aws_models.OPERATIONS[service] == _called(service)


def test_no_other_service_is_called():
    assert set(re.findall(r'self\.client\("([a-z0-9-]+)"', ADAPTER)) == set(aws_models.OPERATIONS)


@pytest.mark.parametrize("service", sorted(aws_models.OPERATIONS))
def test_a_cut_client_knows_only_the_listed_operations_with_their_whole_shapes(service):
    cut = aws_models.session().client(service, region_name="us-west-2").meta.service_model
    whole = WHOLE.client(service, region_name="us-west-2").meta.service_model
    assert set(cut.operation_names) == aws_models.OPERATIONS[service]
    for op in cut.operation_names:
        a, b = cut.operation_model(op), whole.operation_model(op)
        for part in ("input_shape", "output_shape"):
            assert _flat(getattr(a, part)) == _flat(getattr(b, part)), (op, part)
        assert [e.name for e in a.error_shapes] == [e.name for e in b.error_shapes]
    assert len(cut.shape_names) < len(whole.shape_names)


def _flat(shape, seen=None) -> object:
    """A shape as plain data, every shape under it resolved (so both models must hold all of them)."""
    if shape is None:
        return None
    seen = set() if seen is None else seen
    if shape.name in seen:
        return shape.name
    seen = seen | {shape.name}
    out = {"name": shape.name, "type": shape.type_name}
    if shape.type_name == "structure":
        out["members"] = {k: _flat(v, seen) for k, v in shape.members.items()}
    elif shape.type_name == "list":
        out["member"] = _flat(shape.member, seen)
    elif shape.type_name == "map":
        out["key"], out["value"] = _flat(shape.key, seen), _flat(shape.value, seen)
    return out


def test_an_operation_not_listed_fails_at_once_and_other_sessions_stay_whole():
    ec2 = aws_models.session().client("ec2", region_name="us-west-2")
    with pytest.raises(AttributeError):
        ec2.run_instances()
    assert hasattr(boto3.Session().client("ec2", region_name="us-west-2"), "run_instances")


def test_cut_keeps_the_shapes_reached_through_lists_and_maps():
    model = {
        "metadata": {"serviceId": "x"},
        "operations": {
            "Get": {"name": "Get", "input": {"shape": "In"}, "errors": [{"shape": "Oops"}]},
            "Put": {"name": "Put", "input": {"shape": "Other"}},
        },
        "shapes": {
            "In": {"type": "structure", "members": {"Tags": {"shape": "TagList"}, "M": {"shape": "Map"}}},
            "TagList": {"type": "list", "member": {"shape": "Tag"}},
            "Tag": {"type": "structure", "members": {"Key": {"shape": "String"}}},
            "Map": {"type": "map", "key": {"shape": "String"}, "value": {"shape": "Value"}},
            "Value": {"type": "integer"},
            "String": {"type": "string"},
            "Oops": {"type": "structure", "members": {}},
            "Other": {"type": "structure", "members": {"X": {"shape": "Unused"}}},
            "Unused": {"type": "string"},
        },
    }
    out = aws_models.cut(model, frozenset({"Get"}))
    assert set(out["operations"]) == {"Get"} and out["metadata"] == model["metadata"]
    assert set(out["shapes"]) == {"In", "TagList", "Tag", "Map", "Value", "String", "Oops"}
