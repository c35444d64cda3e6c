"""The outputs an apply produced, as the deploys take them (provision/terraform/outputs.py ``applied``: the hook
for feeding a real control plane after the day-one rehearsal)."""

from __future__ import annotations

import json

from provision.terraform import outputs


def _write(out, root, values):
    (out / root).mkdir(parents=True)
    (out / root / "outputs.json").write_text(
        json.dumps({k: {"sensitive": False, "type": "string", "value": v} for k, v in values.items()})
    )


def test_role_arns_efs_ids_and_the_topic_by_name(tmp_path):
    _write(tmp_path, "global", {"autoscaler_role_arn": "arn:aws:iam::1:role/a", "alerts_topic_arn": "arn:aws:sns:us-west-2:1:t",
                                "researcher_role_arns": {"alice": "arn:aws:iam::1:role/r"}, "node_instance_profile": "p", "bucket_names": {"results": "r"}})  # fmt: skip
    _write(tmp_path, "us-west-2", {"efs_file_system_id": "fs-1", "vpc_id": "vpc-1"})
    _write(tmp_path, "us-east-1", {"efs_file_system_id": "fs-2"})
    found = outputs.applied(
        ["global", "us-west-2", "us-east-1", "us-east-2"], tmp_path
    )  # us-east-2: not applied
    assert found == {
        "autoscaler_role_arn": "arn:aws:iam::1:role/a",
        "alerts_topic_arn": "arn:aws:sns:us-west-2:1:t",
        "researcher_role_arns": {"alice": "arn:aws:iam::1:role/r"},
        "bucket_names": {"results": "r"},
        "efs_file_system_ids": {"us-west-2": "fs-1", "us-east-1": "fs-2"},
    }
