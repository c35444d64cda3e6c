"""What `invoke up` deploys once the API answers (issues 12 and 13): the GPU add-ons and the gang scheduler with
its PodGroup CRD, through kubectl (a fake that records its calls); nothing, with what to run later, before."""

from __future__ import annotations

import pytest

from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from provision import addons, cluster_addons, scheduler, tenancy
from tests.provision.kubectl_fake import applies, fake_kubectl


@pytest.fixture
def spec():
    return load_spec()


def test_after_the_primary_region_is_up_the_addons_and_the_gang_scheduler_are_applied(spec, tmp_path):
    kubectl, log = fake_kubectl(tmp_path)
    lines = cluster_addons.after_up(spec, ["global", spec.primary_region], kubectl)
    applied = applies(log)
    assert [a.rsplit(" -f ", 1)[1] for a in applied] == [
        str(tenancy.OUT),  # the admission policy and the policy controller before anything else (issue 26)
        str(addons.OUT),
        str(scheduler.OUT / "podgroup-crd.yaml"),  # the CRD (kept in the repository) before the scheduler
        str(scheduler.OUT / "gang-scheduler.yaml"),
        "build/deploy/lab-settings.yaml",  # what `lab` reads from the cluster (provision/lab_settings.py)
    ]
    assert all("--server-side" in a for a in applied) and len(lines) == 6
    assert "invoke deploy-monitoring" in lines[-1], "no alert topic yet: the command to run later"


def test_with_the_alert_topic_prometheus_and_alertmanager_follow(spec, tmp_path, monkeypatch):
    """Issue 29: once the global root has its outputs, `invoke up` deploys the monitoring stack too."""
    import json

    from provision import monitoring

    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"alerts_topic_arn": {"value": "arn:aws:sns:us-west-2:123456789012:dlr-alerts"},
                                   "alertmanager_role_arn": {"value": None}}))  # fmt: skip
    monkeypatch.setattr(monitoring, "GLOBAL_OUTPUTS", outputs)
    monkeypatch.setattr(monitoring, "OUT", tmp_path / "monitoring")
    kubectl, log = fake_kubectl(tmp_path)
    lines = cluster_addons.after_up(spec, ["global", spec.primary_region], kubectl)
    assert applies(log)[-1].endswith(str(tmp_path / "monitoring" / "monitoring.yaml"))
    assert lines[-1].startswith("applied Prometheus and Alertmanager")


def test_before_the_api_answers_it_says_what_to_run_later_and_applies_nothing(spec, tmp_path):
    kubectl, log = fake_kubectl(tmp_path, reachable=False)
    (line,) = cluster_addons.after_up(spec, [spec.primary_region], kubectl)
    assert "invoke deploy-addons" in line and "invoke deploy-scheduler" in line
    assert applies(log) == []


def test_other_roots_deploy_nothing(spec, tmp_path):
    kubectl, log = fake_kubectl(tmp_path)
    assert cluster_addons.after_up(spec, ["global", "us-east-1"], kubectl) == []
    assert not log.exists()


def test_a_rejected_apply_is_one_line_with_kubectls_status(spec, tmp_path):
    kubectl, _ = fake_kubectl(tmp_path, apply_exit=3)
    with pytest.raises(UserError) as err:
        cluster_addons.deploy_scheduler(spec, kubectl)
    assert len(err.value.lines) == 1 and err.value.exit_code == 3


def test_up_deploys_only_once_mirror_images_has_filled_the_labs_ecr(spec, tmp_path, monkeypatch):
    """The order of day one (issue 36): the primary region's apply makes the lab's ECR repositories, `invoke
    mirror-images` fills them, then the deploys. Before it, `invoke up` applies nothing and names the task; after
    it (its copies made by a crane that puts into moto's ECR what it copies), the add-ons follow."""
    import boto3
    from moto import mock_aws

    from provision import images, lab_images
    from tests.provision.test_lab_images import _manifest, put

    monkeypatch.delenv(images.BY_TAG_ENV, raising=False)
    bodies = {i: _manifest(i) for i in images.table()}
    table = {i: {**e, "digest": bodies[i][1]} for i, e in images.table().items()}
    monkeypatch.setattr(images, "table", lambda path=None: table)
    prefix = images.mirror_prefix(spec)
    kubectl, log = fake_kubectl(tmp_path)
    with mock_aws():
        ecr = boto3.client("ecr", region_name="us-west-2")
        for image in lab_images.third_party(table):  # the primary region's apply: empty repositories
            repository = lab_images.mirror_repository(spec, image)
            ecr.create_repository(repositoryName=repository, imageTagMutability="IMMUTABLE")
        (line,) = cluster_addons.after_up(spec, [spec.primary_region], kubectl)
        assert line.startswith(f"the lab's ECR mirror does not hold {prefix}/") and line.endswith(
            "run `invoke mirror-images`, then `invoke deploy-tenancy`, `invoke deploy-addons`, "
            "`invoke deploy-scheduler` and `invoke deploy-monitoring`"
        )
        assert applies(log) == []

        def crane(argv, **kw):
            if argv[:2] == ["crane", "copy"]:
                upstream = argv[2].split("@")[0]
                put(ecr, argv[3], *bodies[upstream])
            return type("Done", (), {"returncode": 0, "stdout": "", "stderr": ""})()

        def read_back(target):
            name = target.split(":")[0].split("/", 1)[1]
            tag = target.rsplit(":", 1)[1]
            return ecr.describe_images(repositoryName=name, imageIds=[{"imageTag": tag}])["imageDetails"][0][
                "imageDigest"
            ]

        monkeypatch.setattr(
            lab_images.shutil, "which", lambda name: "/usr/bin/crane" if name == "crane" else None
        )
        monkeypatch.setattr(lab_images, "_login_password", lambda host, session=None: "pw")
        assert len(lab_images.mirror_images(spec, run=crane, resolve_digest=read_back)) == len(
            lab_images.third_party(table)
        )
        lines = cluster_addons.after_up(spec, [spec.primary_region], kubectl)
    assert lines[0].startswith("applied the tenancy objects") and len(applies(log)) == 5
