"""What `invoke up` deploys once the API answers (provision/cluster_addons.py ``after_up``, then the autoscaler),
rendered by the same ``provision`` code into one folder and applied to a real API server as `invoke up` applies
it: server-side, each set with its field manager, in order.

The Terraform outputs the deploys need (the autoscaler's role, the alert topic and Alertmanager's role, the results
bucket, the EFS file system and its CSI driver's role) come in as ``Outputs``: from an apply (``Outputs.applied``,
the day-one rehearsal: localcluster/rehearsal.py) or, without one, moto's account's shape and no storage.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from clusterspec.errors import UserError
from clusterspec.spec import Cluster
from provision import addons, deploy, lab_images, lab_settings, monitoring, scheduler, storage, tenancy

ACCOUNT = "123456789012"  # moto's


@dataclass(frozen=True)
class Outputs:
    autoscaler_role_arn: str = f"arn:aws:iam::{ACCOUNT}:role/dlr-autoscaler"
    alert_topic_arn: str = f"arn:aws:sns:us-west-2:{ACCOUNT}:dlr-alerts"
    monitoring_role_arn: str | None = f"arn:aws:iam::{ACCOUNT}:role/dlr-monitoring"
    results_bucket: str | None = None  # None: the global root's outputs under build/terraform, when applied
    efs_file_system_id: str | None = None  # None: no storage (it needs the file system's access points)
    efs_csi_role_arn: str | None = None

    @classmethod
    def applied(cls, found: dict, cluster: Cluster) -> Outputs:
        """From what an apply produced (provision/terraform/outputs.py ``applied``): every value the deploys take,
        or one line naming the output that is missing (never a stand-in)."""
        names = ("autoscaler_role_arn", "alerts_topic_arn", "alertmanager_role_arn", "efs_csi_role_arn")
        missing = [n for n in names if not found.get(n)]
        efs = (found.get("efs_file_system_ids") or {}).get(cluster.primary_region)
        missing += [] if efs else [f"efs_file_system_id ({cluster.primary_region})"]
        results = (found.get("bucket_names") or {}).get("results")
        missing += [] if results else ["bucket_names.results"]
        if missing:
            raise UserError(
                f"the apply's outputs lack {', '.join(missing)}: the deploys after `invoke up` need them"
            )
        return cls(found["autoscaler_role_arn"], found["alerts_topic_arn"], found["alertmanager_role_arn"],
                   results, efs, found["efs_csi_role_arn"])  # fmt: skip


@dataclass(frozen=True)
class Manifest:
    label: str
    path: Path
    field_manager: str


def render(cluster: Cluster, out: Path, outputs: Outputs | None = None) -> list[Manifest]:
    """Every set, in `invoke up`'s order: tenancy, the GPU add-ons, the PodGroup CRD and the gang scheduler, the
    lab settings, Prometheus and Alertmanager, the autoscaler; then, with an EFS file system, the storage of
    `invoke render-storage` (its access points read from AWS with DescribeAccessPoints)."""
    outputs = outputs or Outputs()
    lab_images.use_local_registry(cluster)  # the embedded account's ECR names the lab's own images
    out.mkdir(parents=True, exist_ok=True)
    files = scheduler.write(cluster, out / "scheduler")
    settings = out / "lab-settings.yaml"
    settings.write_text(yaml.safe_dump_all(
        lab_settings.objects(cluster, code_bucket=outputs.results_bucket or lab_settings.results_bucket(cluster)),
        sort_keys=False))  # fmt: skip
    mon = monitoring.write(monitoring.render(cluster, outputs.alert_topic_arn, outputs.monitoring_role_arn, "",
                                             monitoring.watched()), out / "monitoring")  # fmt: skip
    sets = [
        Manifest("tenancy", tenancy.write(cluster, out / "tenancy.yaml"), "research-cluster-tenancy"),
        Manifest("GPU add-ons", addons.write(cluster, out / "addons.yaml"), "research-cluster-addons"),
        Manifest("PodGroup CRD", files["podgroup-crd.yaml"], "research-cluster-scheduler"),
        Manifest("gang scheduler", files["gang-scheduler.yaml"], "research-cluster-scheduler"),
        Manifest("lab settings", settings, "research-cluster-lab"),
        Manifest("monitoring", mon, "research-cluster-monitoring"),
        Manifest("autoscaler", deploy.write(cluster, outputs.autoscaler_role_arn, out / "autoscaler.yaml"),
                 "research-cluster-autoscaler"),
    ]  # fmt: skip
    if outputs.efs_file_system_id:
        efs = storage.lookup_access_points(cluster, outputs.efs_file_system_id, cluster.primary_region)
        written = storage.write_storage(storage.render_storage(cluster, efs, outputs.efs_csi_role_arn or ""),
                                        out / "storage")  # fmt: skip
        sets += [Manifest(f"storage {p.name}", p, "research-cluster-storage") for p in written]
    return sets


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
