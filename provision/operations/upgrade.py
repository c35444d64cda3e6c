"""`invoke upgrade` (docs/operations.md, "Upgrades"): the control plane to cluster.yaml's ``kubernetes.version``,
one member at a time, as kubeadm's "Upgrading kubeadm clusters" says: on the first member kubeadm of the new
version (its pkgs.k8s.io minor channel), ``kubeadm upgrade plan`` then ``kubeadm upgrade apply``; on each other
``kubeadm upgrade node``; on every member then drain, kubelet and kubectl of the new version, restart, wait until
the node is Ready at that version and the API answers, uncordon. A member fails: the ones after it are not
touched. The nodes follow through their image: drift (docs/planner.md, "Drift") replaces each once it is empty.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable

from clusterspec.errors import UserError
from clusterspec.spec import Cluster
from provision.operations.ssm import Member

KUBELET_SKEW = (
    3  # kubelet may be up to three minors older than kube-apiserver (Kubernetes version skew policy)
)
Say = Callable[[str], None]

MEMBER_SCRIPT = r"""set -euo pipefail
TARGET=__TARGET__
MINOR=__MINOR__
ROLE=__ROLE__
export KUBECONFIG=/etc/kubernetes/admin.conf
log() { echo "upgrade: $*"; }
fail() { echo "upgrade: $*" >&2; exit 1; }
imds() {
  local token
  token=$(curl -fsS --max-time 5 -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' http://169.254.169.254/latest/api/token)
  curl -fsS --max-time 5 -H "X-aws-ec2-metadata-token: $token" "http://169.254.169.254/latest/meta-data/$1"
}
ip=$(imds local-ipv4)
node=$(kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}' \
  | awk -v ip="$ip" '$2 == ip {print $1}')
[[ -n $node ]] || fail "no Node has this member's address $ip"
# the packages of the new minor: pkgs.k8s.io has one repository per minor
sed -i -E "s#/core:/stable:/v[0-9]+\.[0-9]+/deb/#/core:/stable:/v$MINOR/deb/#" /etc/apt/sources.list.d/kubernetes.list
apt-get update -q >/dev/null
version=$(apt-cache madison kubeadm | awk -v v="$TARGET" '$3 ~ "^" v "-" {print $3; exit}')
[[ -n $version ]] || fail "no kubeadm $TARGET in pkgs.k8s.io v$MINOR"
apt-mark unhold kubeadm >/dev/null
apt-get install -y -q --allow-change-held-packages "kubeadm=$version" >/dev/null
apt-mark hold kubeadm >/dev/null
[[ $(kubeadm version -o short) == "v$TARGET" ]] || fail "kubeadm is $(kubeadm version -o short), not v$TARGET"
if [[ $ROLE == first ]]; then
  kubeadm upgrade plan "v$TARGET"
  kubeadm upgrade apply -y "v$TARGET"
else
  kubeadm upgrade node
fi
kubectl drain "$node" --ignore-daemonsets --delete-emptydir-data --timeout=10m
apt-mark unhold kubelet kubectl >/dev/null
apt-get install -y -q --allow-change-held-packages "kubelet=$version" "kubectl=$version" >/dev/null
apt-mark hold kubelet kubectl >/dev/null
systemctl daemon-reload
systemctl restart kubelet
for _ in $(seq 90); do
  ready=$(kubectl get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status} {.status.nodeInfo.kubeletVersion}' || true)
  [[ $ready == "True v$TARGET" ]] && break
  sleep 5
done
[[ $ready == "True v$TARGET" ]] || fail "$node is not Ready at v$TARGET after 7.5 minutes: $ready"
kubectl get --raw='/readyz' >/dev/null || fail "the API does not answer /readyz"
kubectl uncordon "$node"
log "$node is Ready at v$TARGET"
"""

STATUS_SCRIPT = """set -euo pipefail
export KUBECONFIG=/etc/kubernetes/admin.conf
kubectl version -o json
kubectl get nodes -o json
"""


def member_script(target: str, first: bool) -> str:
    minor = ".".join(target.split(".")[:2])
    return (MEMBER_SCRIPT.replace("__TARGET__", shlex.quote(target)).replace("__MINOR__", shlex.quote(minor))
            .replace("__ROLE__", "first" if first else "other"))  # fmt: skip


def _minor(version: str) -> tuple[int, int]:
    m = re.match(r"^v?(\d+)\.(\d+)", version)
    if not m:
        raise UserError(f"cannot read the version {version!r}")
    return int(m[1]), int(m[2])


def _first_json(text: str) -> tuple[dict, str]:
    obj, end = json.JSONDecoder().raw_decode(text.lstrip())
    return obj, text.lstrip()[end:]


def status(runner, members: list[Member]) -> tuple[str, dict[str, str]]:
    """The API server's version and every node's kubelet version, read on the first member."""
    (r,) = runner.run([members[0].instance_id], STATUS_SCRIPT, 120, "upgrade: versions").values()
    if not r.ok:
        raise UserError(f"cannot read the versions on member {members[0].index}: {r.stderr.strip()[-300:]}")
    try:
        version, rest = _first_json(r.stdout)
        nodes, _ = _first_json(rest)
    except ValueError:
        raise UserError(f"member {members[0].index}: kubectl printed no version JSON") from None
    kubelets = {
        n["metadata"]["name"]: n["status"]["nodeInfo"]["kubeletVersion"] for n in nodes.get("items", [])
    }
    return version["serverVersion"]["gitVersion"], kubelets


def check(target: str, server: str, kubelets: dict[str, str]) -> list[str]:
    """What kubeadm and the skew policy refuse, as lines (empty: the upgrade may go)."""
    problems = []
    t, s = _minor(target), _minor(server)
    if t < s or (
        t == s and tuple(map(int, target.split("."))) < tuple(map(int, server.lstrip("v").split(".")[:3]))
    ):
        problems.append(f"{target} is older than the control plane's {server}: kubeadm does not downgrade")
    elif t[1] - s[1] > 1 or t[0] != s[0]:
        problems.append(
            f"{server} -> {target} skips a minor: upgrade one minor at a time (kubeadm refuses more)"
        )
    old = {n: v for n, v in kubelets.items() if t[1] - _minor(v)[1] > KUBELET_SKEW}
    if old:
        shown = ", ".join(f"{n} ({v})" for n, v in sorted(old.items())[:10])
        problems.append(f"kubelets more than {KUBELET_SKEW} minors behind {target} (the skew policy): {shown}; "
                        "replace those nodes first")  # fmt: skip
    return problems


def plan_lines(cluster: Cluster, members: list[Member], server: str, kubelets: dict[str, str]) -> list[str]:
    target = cluster.kubernetes.version
    behind = sorted(n for n, v in kubelets.items() if v.lstrip("v") != target)
    return [
        f"control plane {server} -> v{target}, one member at a time: "
        + ", ".join(
            f"{m.index} ({m.instance_id}, {'kubeadm upgrade apply' if i == 0 else 'kubeadm upgrade node'})"
            for i, m in enumerate(members)
        ),  # fmt: skip
        f"{len(behind)} of {len(kubelets)} nodes run another kubelet; cloud nodes follow their image: `invoke bake-ami`"
        " (kubernetes.version), then `invoke up`: the autoscaler replaces each old node once it is empty (drift); "
        "the lab's servers: chef-client with the new attributes",
    ]


def upgrade(cluster: Cluster, runner, members: list[Member], say: Say = print) -> None:
    target = cluster.kubernetes.version
    for i, m in enumerate(members):
        say(f"member {m.index} ({m.instance_id}): {'kubeadm upgrade apply' if i == 0 else 'kubeadm upgrade node'} "
            f"v{target}, then its kubelet")  # fmt: skip
        (r,) = runner.run(
            [m.instance_id], member_script(target, i == 0), 2400, f"upgrade to v{target}"
        ).values()
        if not r.ok:
            raise UserError([
                f"member {m.index} ({m.instance_id}): {r.status}, exit {r.code}: "
                f"{(r.stderr.strip().splitlines() or [''])[-1]}",
                "the members after it were not touched; fix the cause and run invoke upgrade again "
                "(kubeadm upgrade is idempotent on a member already done)",
            ])  # fmt: skip
        done = [line for line in r.stdout.splitlines() if line.startswith("upgrade: ")]
        say("  " + (done[-1] if done else "done"))
