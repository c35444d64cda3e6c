"""`invoke upgrade` (provision/operations/upgrade.py): the member script run with bash against fakes of apt,
kubeadm, kubectl, systemctl and IMDS, in kubeadm's order ("Upgrading kubeadm clusters"); the orchestration one
member at a time, a failure stopping there; the checks kubeadm and the version skew policy impose."""

from __future__ import annotations

import subprocess

import pytest

from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from provision.operations import upgrade
from provision.operations.ssm import Member, Result
from tests.support import ROOT, require_tool

FAKE = r"""#!/bin/bash
name=$(basename "$0")
echo "$name $*" >> "$STATE/calls"
case "$name $1" in
  "curl "*) [[ "$*" == *api/token* ]] && echo tok || { [[ "$*" == *local-ipv4* ]] && echo 10.0.0.10; } ;;
  "apt-cache madison") printf 'kubeadm | 1.36.2-1.1 | https://pkgs.k8s.io/core:/stable:/v1.36/deb  Packages\n' ;;
  "kubeadm version") cat "$STATE/kubeadm-version" 2>/dev/null || echo v1.35.8 ;;
  "apt-get install") [[ "$*" == *kubeadm=1.36.2-1.1* ]] && echo v1.36.2 > "$STATE/kubeadm-version"; true ;;
  "kubectl get")
    if [[ "$*" == *"get nodes"* ]]; then echo "cp-0 10.0.0.10"; echo "cp-1 10.0.32.10";
    elif [[ "$*" == *"get node cp-0"* ]]; then grep -q "systemctl restart kubelet" "$STATE/calls" && echo "True v1.36.2" || echo "True v1.35.8";
    fi ;;
esac
exit 0
"""


def _run_member(tmp_path, first: bool):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("curl", "kubectl", "kubeadm", "apt-get", "apt-cache", "apt-mark", "systemctl", "sleep"):
        (bin_dir / name).write_text(FAKE)
        (bin_dir / name).chmod(0o755)
    sources = tmp_path / "kubernetes.list"
    sources.write_text(
        "deb [signed-by=/etc/apt/keyrings/k.gpg] https://pkgs.k8s.io/core:/stable:/v1.35/deb/ /\n"
    )
    script = upgrade.member_script("1.36.2", first).replace(
        "/etc/apt/sources.list.d/kubernetes.list", str(sources)
    )
    state = tmp_path / "state"
    state.mkdir()
    done = subprocess.run(["bash", "-c", script], env={"PATH": f"{bin_dir}:/usr/bin:/bin", "STATE": str(state)},
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    return done, (state / "calls").read_text().splitlines(), sources.read_text()


def _order(calls, wanted):
    i = 0
    for w in wanted:
        while i < len(calls) and not calls[i].startswith(w):
            i += 1
        assert i < len(calls), f"{w!r} missing or out of order in:\n" + "\n".join(calls)
        i += 1


def test_the_first_member_plans_and_applies_then_upgrades_its_kubelet(tmp_path):
    done, calls, sources = _run_member(tmp_path, first=True)
    assert done.returncode == 0, done.stderr
    assert "/core:/stable:/v1.36/deb/" in sources
    _order(calls, ["apt-get update", "apt-mark unhold kubeadm", "apt-get install -y -q --allow-change-held-packages kubeadm=1.36.2-1.1",
                   "apt-mark hold kubeadm", "kubeadm upgrade plan v1.36.2", "kubeadm upgrade apply -y v1.36.2",
                   "kubectl drain cp-0", "apt-get install -y -q --allow-change-held-packages kubelet=1.36.2-1.1 kubectl=1.36.2-1.1",
                   "systemctl restart kubelet", "kubectl get --raw=/readyz", "kubectl uncordon cp-0"])  # fmt: skip
    assert not any(c.startswith("kubeadm upgrade node") for c in calls)
    assert "upgrade: cp-0 is Ready at v1.36.2" in done.stdout


def test_the_other_members_run_kubeadm_upgrade_node(tmp_path):
    done, calls, _ = _run_member(tmp_path, first=False)
    assert done.returncode == 0, done.stderr
    assert any(c == "kubeadm upgrade node" for c in calls) and not any("upgrade apply" in c for c in calls)


def test_the_script_is_shellcheck_clean(tmp_path):
    shellcheck = require_tool("shellcheck", str(ROOT / ".venv/bin/shellcheck"))
    path = tmp_path / "member.sh"
    path.write_text("#!/bin/bash\n" + upgrade.member_script("1.36.2", True))
    done = subprocess.run([shellcheck, "-S", "warning", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


class Runner:
    def __init__(self, fail=None):
        self.calls, self.fail = [], fail

    def run(self, ids, script, timeout_s=600, comment=""):
        (iid,) = ids
        self.calls.append((iid, "apply" if "ROLE=first" in script else "node"))
        bad = iid == self.fail
        return {
            iid: Result(
                iid, "Failed" if bad else "Success", 1 if bad else 0, "upgrade: ok\n", "boom" if bad else ""
            )
        }


MEMBERS = [Member(0, "i-0", "10.0.0.10"), Member(1, "i-1", "10.0.32.10"), Member(2, "i-2", "10.0.64.10")]


def test_one_member_at_a_time_the_first_applies_and_a_failure_stops_there():
    spec = load_spec()
    runner = Runner()
    upgrade.upgrade(spec, runner, MEMBERS, say=lambda _: None)
    assert runner.calls == [("i-0", "apply"), ("i-1", "node"), ("i-2", "node")]
    runner = Runner(fail="i-1")
    with pytest.raises(UserError) as e:
        upgrade.upgrade(spec, runner, MEMBERS, say=lambda _: None)
    assert runner.calls == [("i-0", "apply"), ("i-1", "node")] and "were not touched" in e.value.lines[-1]


@pytest.mark.parametrize(
    "target,server,kubelets,problem",
    [
        ("1.36.2", "v1.35.8", {"cp-0": "v1.35.8", "gpu-1": "v1.33.1"}, None),
        ("1.37.1", "v1.35.8", {}, "skips a minor"),
        ("1.35.2", "v1.35.8", {}, "kubeadm does not downgrade"),
        (
            "1.36.2",
            "v1.35.8",
            {"titan-01": "v1.32.4"},
            "more than 3 minors behind 1.36.2 (the skew policy): titan-01 (v1.32.4)",
        ),
    ],
)
def test_what_kubeadm_and_the_skew_policy_refuse(target, server, kubelets, problem):
    got = upgrade.check(target, server, kubelets)
    assert (got == []) if problem is None else (problem in got[0])


def test_status_reads_the_versions_kubectl_prints():
    out = '{"serverVersion": {"gitVersion": "v1.35.8"}}\n{"items": [{"metadata": {"name": "cp-0"}, "status": {"nodeInfo": {"kubeletVersion": "v1.35.8"}}}]}'

    class R:
        def run(self, ids, script, timeout_s=600, comment=""):
            return {ids[0]: Result(ids[0], "Success", 0, out, "")}

    assert upgrade.status(R(), MEMBERS) == ("v1.35.8", {"cp-0": "v1.35.8"})
