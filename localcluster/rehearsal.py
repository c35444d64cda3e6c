"""`make day-one`: the day-one rehearsal (provision/terraform/day_one.py: `invoke up --all` with the real provider
against the embedded AWS, a second plan that must converge, `invoke down`), going on past Terraform: right after
the apply, what `invoke up` deploys (localcluster/day_one.py) is rendered with the outputs that apply produced
(the role ARNs, the alert topic, the results bucket, the EFS file system and its access points, read from the
embedded AWS) and applied to a real local control plane (localcluster/stack.py), server-side as `invoke up`
applies it. Any refusal or warning of the API server fails the rehearsal, and so does a deployed object that does
not carry the apply's value (the autoscaler's role, the alert topic, the volumes' file system).

Run: ``python -m localcluster.rehearsal [--spec cluster.yaml] [--out build/day-one]``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from clusterspec.errors import UserError
from clusterspec.spec import Cluster
from localcluster import binaries, day_one
from localcluster.stack import Stack, StackFailed
from provision.terraform import day_one as terraform_day_one
from provision.terraform import outputs


def deploy_on_stack(cluster: Cluster, names: list[str], out: Path, work: Path, steps) -> list[str]:
    """The deploys of `invoke up` with the apply's outputs, on a fresh local control plane; summary lines."""
    found = outputs.applied(names, out)
    applied_outputs = day_one.Outputs.applied(found, cluster)
    stack = Stack(work / "control-plane")
    try:
        steps.run("start the local control plane", lambda: stack.start(timeout_s=180))  # 2 loaded cores
        manifests = steps.run(
            "render the deploys with the apply's outputs",
            lambda: day_one.render(cluster, work / "deploy", applied_outputs),
        )
        done = steps.run(
            "apply them to the control plane",
            lambda: day_one.apply(str(binaries.path("kubectl")), stack.admin_kubeconfig, manifests),
        )
        problems = [f"{a.manifest.label}: {line}" for a in done for line in (*a.refusals, *a.warnings)]
        problems += [f"{a.manifest.label}: kubectl exit {a.returncode}" for a in done if a.returncode]
        if problems:
            raise UserError(
                ["day-one: the API server refused or warned about what `invoke up` deploys:", *problems]
            )
        carried = carries(stack, applied_outputs)
        if carried:
            raise UserError(["day-one: deployed objects do not carry the apply's outputs:", *carried])
    except (StackFailed, binaries.Missing) as e:
        raise UserError(f"day-one: the local control plane: {e}".splitlines()[0]) from None
    finally:
        stack.stop()
    return [
        f"deployed on the local control plane (kube-apiserver {stack.server}): {day_one.count(manifests)} objects "
        f"in {len(manifests)} sets ({', '.join(m.label for m in manifests)}), no refusal, no warning",
        f"with the apply's outputs: {applied_outputs.autoscaler_role_arn}, {applied_outputs.alert_topic_arn}, "
        f"{applied_outputs.efs_file_system_id}, {applied_outputs.results_bucket}",
    ]


def expected(applied: day_one.Outputs) -> list[tuple[str, str, str]]:
    """(output, its value, the kinds whose objects must carry it): each value that crosses from the apply."""
    return [
        ("autoscaler_role_arn", applied.autoscaler_role_arn, "deployments"),  # the autoscaler's AWS_ROLE_ARN
        (
            "alertmanager_role_arn",
            applied.monitoring_role_arn or "",
            "serviceaccounts",
        ),  # its IRSA annotation
        ("alerts_topic_arn", applied.alert_topic_arn, "configmaps"),  # Alertmanager's SNS receiver
        ("bucket_names.results", applied.results_bucket or "", "configmaps"),  # the lab settings' code bucket
        ("efs_csi_role_arn", applied.efs_csi_role_arn or "", "daemonsets"),  # the EFS CSI node plugin's role
        (
            "efs_file_system_id",
            f'"{applied.efs_file_system_id}::',
            "persistentvolumes",
        ),  # volumeHandle fs::fsap
    ]


def carries(stack: Stack, applied: day_one.Outputs) -> list[str]:
    """What the API server holds, read back: each value that crossed from the apply must be in it."""
    problems = []
    for name, value, kinds in expected(applied):
        held = stack.kubectl("get", kinds, "-A", "-o", "json").stdout
        if not value or value not in held:
            problems.append(f"{name} {value or '(none)'}: in none of the {kinds} the API server holds")
    return problems


def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()
    code = terraform_day_one.main(argv, after_apply=deploy_on_stack, prog="python -m localcluster.rehearsal")
    print(f"make day-one: exit {code} after {time.perf_counter() - started:.0f} s", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
