"""What `invoke up` deploys once the API answers (provision/cluster_addons.py ``after_up``, then the autoscaler),
rendered by the same ``provision`` code into one folder and applied to a real API server as `invoke up` applies
it: server-side, each set with its field manager, in order.

The Terraform outputs the deploys need (the autoscaler's role, the alert topic and Prometheus's role) come in as
``Outputs``: from an apply (the day-one rehearsal) or, without one, moto's account's shape.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from clusterspec.spec import Cluster
from provision import addons, deploy, lab_images, lab_settings, monitoring, scheduler, tenancy

ACCOUNT = "123456789012"  # moto's


@dataclass(frozen=True)
class Outputs:
    autoscaler_role_arn: str = f"arn:aws:iam::{ACCOUNT}:role/dlr-autoscaler"
    alert_topic_arn: str = f"arn:aws:sns:us-west-2:{ACCOUNT}:dlr-alerts"
    monitoring_role_arn: str | None = f"arn:aws:iam::{ACCOUNT}:role/dlr-monitoring"


@dataclass(frozen=True)
class Manifest:
    label: str
    path: Path
    field_manager: str


def render(cluster: Cluster, out: Path, outputs: Outputs | None = None) -> list[Manifest]:
    """Every set, in `invoke up`'s order: tenancy, the GPU add-ons, the PodGroup CRD and the gang scheduler, the
    lab settings, Prometheus and Alertmanager, the autoscaler."""
    outputs = outputs or Outputs()
    lab_images.use_local_registry(cluster)  # the embedded account's ECR names the lab's own images
    out.mkdir(parents=True, exist_ok=True)
    files = scheduler.write(cluster, out / "scheduler")
    settings = out / "lab-settings.yaml"
    settings.write_text(yaml.safe_dump_all(
        lab_settings.objects(cluster, code_bucket=lab_settings.results_bucket(cluster)), sort_keys=False))  # fmt: skip
    mon = monitoring.write(monitoring.render(cluster, outputs.alert_topic_arn, outputs.monitoring_role_arn, "",
                                             monitoring.watched()), out / "monitoring")  # fmt: skip
    return [
        Manifest("tenancy", tenancy.write(cluster, out / "tenancy.yaml"), "research-cluster-tenancy"),
        Manifest("GPU add-ons", addons.write(cluster, out / "addons.yaml"), "research-cluster-addons"),
        Manifest("PodGroup CRD", files["podgroup-crd.yaml"], "research-cluster-scheduler"),
        Manifest("gang scheduler", files["gang-scheduler.yaml"], "research-cluster-scheduler"),
        Manifest("lab settings", settings, "research-cluster-lab"),
        Manifest("monitoring", mon, "research-cluster-monitoring"),
        Manifest("autoscaler", deploy.write(cluster, outputs.autoscaler_role_arn, out / "autoscaler.yaml"),
                 "research-cluster-autoscaler"),
    ]  # fmt: skip


def count(manifests: list[Manifest]) -> int:
    return sum(1 for m in manifests for d in yaml.safe_load_all(m.path.read_text()) if d)


@dataclass
class Applied:
    manifest: Manifest
    returncode: int
    refusals: list[str]
    warnings: list[str]


def apply(kubectl: str, kubeconfig: Path, manifests: list[Manifest]) -> list[Applied]:
    """Each set applied server-side; a refusal does not stop the next set (every refusal is reported)."""
    done = []
    for m in manifests:
        run = subprocess.run([kubectl, "--kubeconfig", str(kubeconfig), "apply", "--server-side",
                              f"--field-manager={m.field_manager}", "-f", str(m.path)],
                             capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        lines = run.stderr.splitlines()
        warnings = [ln for ln in lines if ln.startswith("Warning:")]
        refusals = [ln for ln in lines if ln and not ln.startswith("Warning:")]
        done.append(Applied(m, run.returncode, refusals, warnings))
    return done
