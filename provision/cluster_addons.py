"""What `invoke up` deploys into the cluster once its API answers: the GPU add-ons (provision/addons.py) and the
gang scheduler with its PodGroup CRD (provision/scheduler.py). The control plane forms after `terraform apply`
returns, so when the API does not answer yet this says which commands to run later instead of failing the apply
that succeeded."""

from __future__ import annotations

import os
from pathlib import Path

from clusterspec.spec import Cluster
from provision import addons, images, kubectl, lab_images, monitoring, scheduler, tenancy


def deploy_scheduler(cluster: Cluster, kubectl_path: str | None = None) -> list[str]:
    """Render the scheduler files, then apply the PodGroup CRD of the release and the gang scheduler."""
    files = scheduler.write(cluster)
    manifests = files["gang-scheduler.yaml"]
    exe = kubectl.ready(manifests, kubectl_path)
    crd = files["podgroup-crd.yaml"]
    images.check_pinned(manifests, cluster=cluster)
    kubectl.apply(exe, crd, field_manager="research-cluster-scheduler")
    kubectl.apply(exe, manifests, field_manager="research-cluster-scheduler")
    return [f"applied the PodGroup CRD ({crd}, scheduler-plugins {scheduler.plugins_version(cluster)})",
            f"applied {manifests}"]  # fmt: skip


def deploy_lab_settings(
    cluster: Cluster, kubectl_path: str | None = None, out: Path | None = None
) -> list[str]:
    """The settings `lab` reads from the cluster (provision/lab_settings.py), applied with kubectl."""
    import yaml

    from provision import lab_settings

    path = out or Path("build/deploy/lab-settings.yaml")
    path.parent.mkdir(parents=True, exist_ok=True)
    docs = lab_settings.objects(cluster, code_bucket=lab_settings.results_bucket(cluster))
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    kubectl.apply(kubectl.ready(path, kubectl_path), path, field_manager="research-cluster-lab")
    return [f"applied the lab settings ({path})"]


def after_up(cluster: Cluster, roots: list[str], kubectl_path: str | None = None) -> list[str]:
    """After `invoke up` applied ROOTS: deploy the add-ons and the gang scheduler when the primary region was
    among them and the API answers; otherwise the lines that say what to run once it does."""
    if cluster.primary_region not in roots:
        return []
    if not kubectl.reachable(kubectl_path):
        return [
            "the Kubernetes API does not answer yet (the control plane forms after the apply: "
            "`invoke control-plane-status`); once it does, run `invoke deploy-tenancy`, `invoke deploy-addons`, `invoke deploy-scheduler` and `invoke deploy-monitoring`"
        ]
    # the order of day one (issue 36): the primary region's apply made the lab's ECR repositories; the deploys name
    # the mirrors there, which `invoke mirror-images` fills
    if os.environ.get(images.BY_TAG_ENV) != "1":
        absent = lab_images.missing_mirrors(cluster)
        if absent:
            more = f" and {len(absent) - 1} more" if len(absent) > 1 else ""
            return [
                f"the lab's ECR mirror does not hold {absent[0]}{more} yet: run `invoke mirror-images`, then "
                "`invoke deploy-tenancy`, `invoke deploy-addons`, `invoke deploy-scheduler` and `invoke "
                "deploy-monitoring`"
            ]
    # tenancy first (issue 26): the network policy controller and the admission policy before any researcher
    lines = [f"applied the tenancy objects ({tenancy.deploy(cluster, kubectl=kubectl_path)})"]
    path = addons.deploy_addons(cluster, kubectl=kubectl_path)
    lines += [f"applied the GPU add-ons ({path})", *deploy_scheduler(cluster, kubectl_path),
              *deploy_lab_settings(cluster, kubectl_path)]  # fmt: skip
    # Prometheus and Alertmanager (issue 29, provision/monitoring.py), once the global root has the alert topic
    if monitoring.GLOBAL_OUTPUTS.exists():
        lines.append(
            f"applied Prometheus and Alertmanager ({monitoring.deploy(cluster, kubectl=kubectl_path)})"
        )
    else:
        lines.append(
            "no alert topic yet (the global root's outputs): run `invoke deploy-monitoring` after it"
        )
    return lines
