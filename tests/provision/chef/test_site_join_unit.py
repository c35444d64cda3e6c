"""The lab's servers join as the cloud nodes do: cluster-join.service (systemd, restarted with back-off for ever)
runs the generated cluster-join, one attempt each: the current token and CA hash from SSM with the site's profile,
the token-less join configuration filled in, `kubeadm join`, a reset after a failure; nothing once joined."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from clusterspec.loader import load_spec
from tests.provision.chef.support import generate, render

pytestmark = pytest.mark.tool  # Ruby renders the templates

FAKE = """#!/bin/bash
echo "$(basename "$0") $*" >> "$FAKE_STATE/calls"
case $(basename "$0") in
  aws) case " $* " in *join-token*) echo abcdef.0123456789abcdef ;; *ca-cert-hash*) echo sha256:5f1e ;; esac ;;
  kubeadm) [[ $1 == join ]] && { cp "$3" "$FAKE_STATE/seen.yaml"; [[ -e $FAKE_STATE/fail ]] && exit 1; }; exit 0 ;;
esac
"""


def _run(tmp_path, fail: bool, joined: bool = False):
    _, node_json = generate(load_spec(), tmp_path)
    script = render("cluster-join.sh.erb", node_json)
    state, root, bin_ = tmp_path / "state", tmp_path / "root", tmp_path / "bin"
    for d in (state, root / "etc/kubernetes", bin_):
        d.mkdir(parents=True)
    (root / "etc/kubernetes/kubeadm-join.yaml.template").write_text(
        "token: __JOIN_TOKEN__\\nhash: __CA_CERT_HASH__\\n"
    )
    if joined:
        (root / "etc/kubernetes/kubelet.conf").write_text("apiVersion: v1\\n")
    if fail:
        (state / "fail").touch()
    for name in ("aws", "kubeadm"):
        (bin_ / name).write_text(FAKE)
        (bin_ / name).chmod(0o755)
    (tmp_path / "cluster-join").write_text(script)
    done = subprocess.run(["bash", str(tmp_path / "cluster-join")], capture_output=True, text=True, timeout=30,
                          env={"PATH": f"{bin_}:/usr/bin:/bin", "FAKE_STATE": str(state), "JOIN_ROOT": str(root)})  # fmt: skip
    calls = (state / "calls").read_text().splitlines() if (state / "calls").exists() else []
    return done, calls, state, root


def test_an_attempt_fills_the_current_token_in_and_joins(tmp_path):
    done, calls, state, root = _run(tmp_path, fail=False)
    assert done.returncode == 0, done.stderr
    assert (state / "seen.yaml").read_text() == "token: abcdef.0123456789abcdef\\nhash: sha256:5f1e\\n"
    assert not (root / "etc/kubernetes/kubeadm-join.yaml").exists()  # the filled-in config never stays
    assert any(
        "--profile" not in c and c.startswith("aws ssm get-parameter --region us-west-2") for c in calls
    )


def test_a_failed_attempt_resets_and_exits_for_systemd_to_retry(tmp_path):
    done, calls, _state, _root = _run(tmp_path, fail=True)
    assert done.returncode == 1 and "resetting before the next attempt" in done.stderr
    assert calls[-1] == "kubeadm reset --force"


def test_a_joined_server_is_left_alone(tmp_path):
    done, calls, _state, _root = _run(tmp_path, fail=False, joined=True)
    assert done.returncode == 0 and calls == []


def test_the_unit_retries_for_ever(tmp_path):
    _, node_json = generate(load_spec(), tmp_path)
    unit = render("cluster-join.service.erb", node_json)
    keys = dict(ln.split("=", 1) for ln in unit.splitlines() if "=" in ln and not ln.startswith("#"))
    assert keys["Restart"] == "on-failure" and keys["StartLimitIntervalSec"] == "0"
    assert keys["ExecStart"] == "/usr/local/sbin/cluster-join"
    analyze = shutil.which("systemd-analyze")
    if analyze:
        (tmp_path / "cluster-join.service").write_text(
            unit.replace("/usr/local/sbin/cluster-join", "/bin/true")
        )
        done = subprocess.run(
            [analyze, "verify", str(tmp_path / "cluster-join.service")], capture_output=True, text=True
        )
        problems = [ln for ln in done.stderr.splitlines() if "cluster-join.service" in ln
                    and "RestartSteps" not in ln and "RestartMaxDelaySec" not in ln]  # fmt: skip
        assert problems == [], done.stderr


def test_the_rendered_script_is_shellcheck_clean(tmp_path):
    from tests.support import ROOT, require_tool

    shellcheck = require_tool("shellcheck", str(ROOT / ".venv/bin/shellcheck"))
    _, node_json = generate(load_spec(), tmp_path)
    (tmp_path / "cluster-join").write_text(render("cluster-join.sh.erb", node_json))
    done = subprocess.run(
        [shellcheck, "-S", "warning", str(tmp_path / "cluster-join")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout
