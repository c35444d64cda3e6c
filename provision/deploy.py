"""The autoscaler's Kubernetes manifests, rendered from the cluster spec (templates in ``deploy/manifests``).

Namespace (Pod Security "restricted" enforced), ServiceAccount, least-privilege ClusterRole/Role (no wildcard verbs
or resources), a Deployment of two replicas with leader election whose AWS credentials come from its projected
service-account token (IAM roles for service accounts, no hostNetwork), a PodDisruptionBudget and the metrics
Service. The
Deployment's flags come from the spec's ``autoscaler`` section and its node groups' warm pools; the role the
autoscaler assumes comes from Terraform's global outputs when they exist.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import jinja2
import yaml

from clusterspec.errors import UserError
from clusterspec.names import AUTOSCALER_NAMESPACE as DEFAULT_NAMESPACE
from clusterspec.names import (
    AUTOSCALER_SERVICE_ACCOUNT,
    IRSA_AUDIENCE,
    IRSA_TOKEN_DIR,
    LEASE_NAME,
    MONITORING_NAMESPACE,
    STATE_CONFIGMAP,
    STATUS_CONFIGMAP,
)
from clusterspec.spec import Cluster
from provision import checkout, kubectl, lab_images

REPO = Path(__file__).resolve().parent.parent
TEMPLATES = REPO / "deploy" / "manifests"
OUT = REPO / "build" / "deploy" / "autoscaler.yaml"
TERRAFORM_GLOBAL_OUTPUTS = REPO / "build" / "terraform" / "global" / "outputs.json"
ORDER = ["namespace", "rbac", "deployment", "disruption-budget", "service"]
NAME = AUTOSCALER_SERVICE_ACCOUNT
METRICS_PORT = 8085
REPLICAS = 2
ROLE_ARN = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}")


def _duration(seconds: int) -> str:
    return f"{seconds}s"


def autoscaler_args(cluster: Cluster) -> list[str]:
    """The container's arguments: ``run`` with the spec's settings (and leader election, for two replicas).

    The cluster's name and regions go in the environment instead (``cluster_env``), so that
    ``kubectl exec deploy/research-autoscaler -- autoscaler snapshot`` finds them as ``run`` does."""
    s = cluster.autoscaler
    args = [
        "run",
        f"--scan-interval={_duration(s.scan_interval_s)}",
        f"--idle-threshold={_duration(s.idle_threshold_s)}",
        f"--boot-timeout={_duration(s.boot_timeout_s)}",
        f"--max-scale-in-fraction={s.max_scale_in_fraction}",
        f"--max-new-nodes={s.max_new_nodes_per_loop}",
        f"--priority-cutoff={s.priority_cutoff}",
        f"--spare-gpus={s.spare_gpus}",
        f"--drift-deadline={_duration(int(cluster.operations.drift_deadline_h * 3600))}",
        f"--metrics-port={METRICS_PORT}",
        "--leader-elect",
    ]
    for region in cluster.spill_over_order:
        for group in cluster.region(region).node_groups:
            if group.warm_pool:
                args.append(f"--warm-pool={cluster.asg_name(region, group)}={group.warm_pool}")
    return args


def cluster_env(cluster: Cluster) -> dict[str, str]:
    """What every ``autoscaler`` command in the pod reads: the cluster's name and regions in spill-over order."""
    return {"AUTOSCALER_CLUSTER_NAME": cluster.name, "AUTOSCALER_REGIONS": ",".join(cluster.spill_over_order)}


def role_arn(path: Path = TERRAFORM_GLOBAL_OUTPUTS) -> str:
    """``autoscaler_role_arn`` from ``terraform output -json`` of the global root (written by ``invoke up``).

    Without it the autoscaler could not reach AWS, so a missing file is an error naming the command that writes it.
    """
    if not path.exists():
        raise UserError(
            f"{path}: not found: the autoscaler's AWS role is an output of the global Terraform root; "
            "run `invoke up --region global` (or `invoke up --all`) first, or pass --role-arn ARN"
        )
    try:
        value = json.loads(path.read_text())["autoscaler_role_arn"]["value"]
    except (ValueError, KeyError, TypeError):
        raise UserError(
            f"{path}: no autoscaler_role_arn output; re-run the Terraform apply of the global root "
            "(`invoke up --region global`)"
        ) from None
    return check_role_arn(value, str(path))


def check_role_arn(value: object, where: str) -> str:
    if not isinstance(value, str) or not ROLE_ARN.fullmatch(value):
        raise UserError(
            f"{where}: {value!r} is not an IAM role ARN (arn:aws:iam::<12-digit account>:role/<name>)"
        )
    return value


def _mapping_lines(data: dict[str, str]) -> str:
    return "\n".join(f"{k}: {json.dumps(v)}" for k, v in data.items())


def render(cluster: Cluster, arn: str | None) -> list[dict]:
    """The manifests as objects, in apply order."""
    selector = {"app.kubernetes.io/name": NAME}
    labels = {
        **selector,
        "app.kubernetes.io/part-of": cluster.name,
        "app.kubernetes.io/component": "autoscaler",
    }
    values = {
        "name": NAME,
        "namespace": DEFAULT_NAMESPACE,
        "labels": _mapping_lines(labels),
        "selector": _mapping_lines(selector),
        "image": lab_images.autoscaler_image(cluster),
        "args": autoscaler_args(cluster),
        "cluster_env": cluster_env(cluster),
        "replicas": REPLICAS,
        "metrics_port": METRICS_PORT,
        "primary_region": cluster.primary_region,
        "role_arn": arn,
        "state_configmap": STATE_CONFIGMAP,
        "status_configmap": STATUS_CONFIGMAP,
        "lease": LEASE_NAME,
        "token_dir": IRSA_TOKEN_DIR,
        "audience": IRSA_AUDIENCE,
        "monitoring_namespace": MONITORING_NAMESPACE,
    }
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(checkout.require(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    docs: list[dict] = []
    for name in ORDER:
        text = env.get_template(f"{name}.yaml.j2").render(**values)
        docs.extend(d for d in yaml.safe_load_all(text) if d)
    from provision import images

    return images.pin_docs(docs, cluster)


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the AWS config file) as literal blocks, as a person would write them."""


_Dumper.add_representer(
    str,
    lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None),
)


def dump(docs: list[dict]) -> str:
    return "---\n".join(yaml.dump(d, Dumper=_Dumper, sort_keys=False) for d in docs)


def write(cluster: Cluster, arn: str | None, out: Path = OUT) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dump(render(cluster, arn)))
    return out


def apply(path: Path, cluster: Cluster | None = None) -> None:
    """``kubectl apply -f path``; every way it does not deploy is an error (exit status non-zero), never a quiet 0.
    With ``cluster``: every image from the lab's own registry, or nothing is applied."""
    from provision import images

    exe = kubectl.ready(path)
    images.check_pinned(path, cluster=cluster)
    kubectl.apply(exe, path)


def deploy(spec: str | None, arn: str | None, dry_run: bool) -> None:
    """``invoke deploy-autoscaler``: render, then apply (or print, with ``dry_run``)."""
    from clusterspec.loader import load_spec

    cluster = load_spec(spec)
    if arn:
        arn = check_role_arn(arn, "--role-arn")
    elif not dry_run or TERRAFORM_GLOBAL_OUTPUTS.exists():
        arn = role_arn(TERRAFORM_GLOBAL_OUTPUTS)
    else:
        print(
            f"warning: {TERRAFORM_GLOBAL_OUTPUTS} not found: these manifests have no AWS role "
            "(`invoke up --region global` writes it)",
            file=sys.stderr,
        )
    path = write(cluster, arn, OUT)
    if dry_run:
        print(path.read_text(), end="")
        return
    apply(path, cluster)
    print(f"deployed {path} (role {arn})")
