"""`invoke deploy-autoscaler` says what happened in its exit status: every way nothing was deployed is a one-line
error and a non-zero exit (issue 16: it exited 0 when it deployed nothing, and left the AWS role out silently).
kubectl is faked by small scripts on the PATH; the real one is not run."""

from __future__ import annotations

import json
import sys

import pytest

from clusterspec.errors import UserError
from provision import deploy
from tests.provision.kubectl_fake import applies, fake_kubectl

ARN = "arn:aws:iam::123456789012:role/dlr-autoscaler"


def run_task(tmp_path, bin_dir, role: str, mode: str, monkeypatch, capsys) -> tuple[int, str, str]:
    """deploy.deploy as the task calls it, with kubectl looked up in BIN_DIR only: (exit status, stdout, stderr)."""
    monkeypatch.setenv("PATH", str(bin_dir))  # the fake alone: its shebang is absolute
    monkeypatch.setattr(deploy, "TERRAFORM_GLOBAL_OUTPUTS", tmp_path / "outputs.json")
    monkeypatch.setattr(deploy, "OUT", tmp_path / "a.yaml")
    code = 0
    try:
        deploy.deploy(None, role or None, mode == "dry")
    except UserError as e:
        assert len(e.lines) == 1
        print(e.lines[0], file=sys.stderr)
        code = e.exit_code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def outputs(tmp_path):
    (tmp_path / "outputs.json").write_text(json.dumps({"autoscaler_role_arn": {"value": ARN}}))


def test_no_kubectl_is_an_error_not_a_quiet_zero(tmp_path, outputs, monkeypatch, capsys):
    code, out, err = run_task(tmp_path, tmp_path / "empty-bin", "", "apply", monkeypatch, capsys)
    assert code == 2
    assert "kubectl: not found on the PATH: nothing was deployed" in err


def test_an_unreachable_cluster_names_kubectls_reason(tmp_path, outputs, monkeypatch, capsys):
    _, log = fake_kubectl(tmp_path / "bin", reachable=False)
    code, out, err = run_task(tmp_path, tmp_path / "bin", "", "apply", monkeypatch, capsys)
    assert code == 2
    assert "no reachable cluster" in err and "localhost:8080 was refused" in err
    assert applies(log) == []


def test_a_failed_apply_exits_with_kubectls_status(tmp_path, outputs, monkeypatch, capsys):
    fake_kubectl(tmp_path / "bin", apply_exit=3)
    code, out, err = run_task(tmp_path, tmp_path / "bin", "", "apply", monkeypatch, capsys)
    assert code == 3 and "kubectl apply -f" in err


def test_a_deploy_applies_the_rendered_file_and_says_so(tmp_path, outputs, monkeypatch, capsys):
    _, log = fake_kubectl(tmp_path / "bin")
    code, out, err = run_task(tmp_path, tmp_path / "bin", "", "apply", monkeypatch, capsys)
    assert code == 0, err
    assert applies(log) == [f"apply -f {tmp_path / 'a.yaml'}"]
    assert f"role {ARN}" in out


def test_without_terraform_outputs_a_deploy_names_the_command_that_writes_them(tmp_path, monkeypatch, capsys):
    _, log = fake_kubectl(tmp_path / "bin")
    code, out, err = run_task(tmp_path, tmp_path / "bin", "", "apply", monkeypatch, capsys)
    assert code == 2
    assert "invoke up --region global" in err and "--role-arn" in err
    assert applies(log) == []


def test_a_dry_run_without_outputs_prints_the_manifests_and_warns(tmp_path, monkeypatch, capsys):
    code, out, err = run_task(tmp_path, tmp_path / "bin", "", "dry", monkeypatch, capsys)
    assert code == 0
    assert "kind: Deployment" in out and "role_arn" not in out
    assert "no AWS role" in err


def test_a_given_role_arn_is_checked(tmp_path, monkeypatch, capsys):
    code, out, err = run_task(
        tmp_path, tmp_path / "bin", "arn:aws:iam::123:role/x", "dry", monkeypatch, capsys
    )
    assert code == 2 and "--role-arn: 'arn:aws:iam::123:role/x' is not an IAM role ARN" in err
    code, out, err = run_task(tmp_path, tmp_path / "bin", ARN, "dry", monkeypatch, capsys)
    assert code == 0 and f"value: {ARN}" in out
