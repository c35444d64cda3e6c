"""The day-one path rehearsed on an embedded AWS with the real AWS provider (docs/terraform.md, "Rehearsal").

A fresh embedded AWS (localcluster/aws_server.py: moto over TLS on a loopback port, a new account), the
operator's first steps on it as docs/terraform.md gives them (the vCPU quota increases that `invoke preflight`
asks for, the baked image's record in every region, `invoke vpn-ca`'s certificates in ACM, the lab's registry,
`invoke bootstrap-state`), then the commands a person runs, each a real `invoke` process with ``--endpoint``:
`preflight`, `up --all --yes` (automation answers the questions; a person is still asked), a second
`plan --all` classified by drift.py (no change but a left-out resource's creation, data/rehearsal_left_out.yaml,
and the moto gaps of data/rehearsal_drift.yaml), and `down --all --yes --delete-data --kill-jobs`. Timings are
printed per step; any failure ends the run with exit status 1.

Right after the apply, ``after_apply`` gets the apply's outputs: `make day-one` (localcluster/rehearsal.py) applies
what `invoke up` deploys with them to a real local control plane; run alone, this module only names them.

Run: ``python -m provision.terraform.day_one [--spec cluster.yaml] [--out build/day-one]`` (Terraform only).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from clusterspec.spec import Cluster
from provision.images import BY_TAG_ENV
from provision.terraform import commands, drift, endpoint, mirror, rehearsal
from provision.terraform.render import roots
from provision.terraform.settings import REPO

ROLES_ANYWHERE_GAP = (
    "moto 5.2.6 has no IAM Roles Anywhere API: the provider retries CreateTrustAnchor for ever"
)
STEP_TIMEOUT_S = 45 * 60  # one step (an apply of all roots) ending later is a hang: the run fails


class Steps:
    def __init__(self):
        self.started = time.perf_counter()
        self.times: list[tuple[str, float]] = []

    def run(self, name: str, fn):
        print(f"== day-one: {name}", flush=True)
        t = time.perf_counter()
        result = fn()
        self.times.append((name, time.perf_counter() - t))
        print(f"== day-one: {name}: {self.times[-1][1]:.1f}s", flush=True)
        return result

    def report(self) -> list[str]:
        lines = [f"  {name:<44} {s:8.1f}s" for name, s in self.times]
        return lines + [f"  {'total':<44} {time.perf_counter() - self.started:8.1f}s"]


def start_server(folder: Path) -> tuple[subprocess.Popen, str, str]:
    """A fresh embedded AWS on a free loopback port, over TLS: (process, URL, CA bundle)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "localcluster.aws_server", "--port", "0", "--tls", str(folder / "tls")],
        stdout=subprocess.PIPE,
        stderr=open(folder / "aws_server.log", "w"),  # noqa: SIM115 - the server's for its whole life
        text=True,
        cwd=REPO,
    )
    line = proc.stdout.readline()
    if not line:
        proc.wait(10)
        raise UserError(f"the embedded AWS did not start; see {folder / 'aws_server.log'}")
    ready = json.loads(line)
    return proc, ready["url"], ready["ca_bundle"]


def prepare_account(cluster: Cluster, out: Path, home: Path) -> dict[str, str]:
    """The operator's steps before the first `up`, on the embedded AWS (boto3 follows AWS_ENDPOINT_URL):
    the quota increases preflight asks for, the bake's image record, `invoke vpn-ca` (the Client VPN's CA and
    server certificate in ACM, their ARNs in OUT's tfvars), the lab's registry. Returns the environment the
    commands need (TF_VAR_ of the certificates, LAB_REGISTRY)."""
    import boto3

    from provision import lab_images, preflight, vpn_ca

    for region in cluster.spill_over_order:
        sq = boto3.client("service-quotas", region_name=region)
        for (kind, family), need in preflight.vcpu_needs(cluster, region).items():
            code = (preflight.SPOT if kind == "spot" else preflight.ON_DEMAND).get(family)
            if code:
                sq.request_service_quota_increase(
                    ServiceCode="ec2", QuotaCode=code, DesiredValue=need.maximum
                )
        # `invoke bake-ami` copies the baked image to every region and records it here
        ec2 = boto3.client("ec2", region_name=region)
        source = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
        image = ec2.copy_image(Name=f"{cluster.name}-gpu-worker", SourceImageId=source, SourceRegion=region)
        boto3.client("ssm", region_name=region).put_parameter(
            Name=f"/{cluster.name}/ami/gpu-worker", Value=image["ImageId"], Type="String", Overwrite=True
        )
    # `invoke vpn-ca`: the VPN CA (in the rehearsal's own admin folder) and the server certificate it issues, in
    # ACM with its chain; the ARNs go to the primary root's tfvars and, for `invoke preflight`, the environment
    result = vpn_ca.create(cluster, boto3.client("acm", region_name=cluster.primary_region), out, home)
    print("\n".join(result.lines))
    # the researchers' trust anchor needs IAM Roles Anywhere, which moto lacks (the provider retries
    # CreateTrustAnchor for ever): the global root is rehearsed without the CA (its module at count 0), said here
    (out / "global" / vpn_ca.CA_TFVARS).unlink()
    print(
        f"left out: module.researcher_access ({ROLES_ANYWHERE_GAP}): the global root without {vpn_ca.CA_TFVARS}"
    )
    env = {f"TF_VAR_{v}": result.arn for v in vpn_ca.VARIABLES}
    # the lab's registry is the account's ECR in the primary region (the primary root's output registry_host)
    env[lab_images.REGISTRY_ENV] = lab_images.local_registry(cluster)
    return env


def invoke(*args: str, env: dict[str, str]) -> None:
    """One `invoke` command as a person runs it; its output streams; a non-zero exit ends the rehearsal."""
    cmd = [str(Path(sys.executable).with_name("invoke")), *args]
    print("$ " + " ".join(cmd[0:1] and ["invoke", *args]), flush=True)
    code = subprocess.run(cmd, env=env, cwd=REPO, timeout=STEP_TIMEOUT_S).returncode
    if code != 0:
        raise UserError(f"day-one: `invoke {' '.join(args)}` failed (exit {code}); its messages are above")


def managed_resources(root: Path) -> int:
    out = subprocess.run(
        [shutil.which("terraform") or "terraform", "state", "list"], cwd=root, capture_output=True, text=True
    ).stdout.split()
    return sum(1 for a in out if not a.startswith("data.") and ".data." not in a)


def second_plan(
    cluster: Cluster, names: list[str], out: Path, url: str, plugin_dir: Path | None, keep: Path
) -> drift.Verdict:
    """The plan after the apply, classified (drift.py): each root's plan JSON is kept in KEEP."""
    keep.mkdir(parents=True, exist_ok=True)
    plans = {}
    for name, changes in commands.plan(cluster, names, out, plugin_dir=plugin_dir, url=url).items():
        plans[name] = changes.plan
        (keep / f"{name}.json").write_text(json.dumps(changes.plan, indent=1, sort_keys=True))
    verdict = drift.classify(plans, drift.load())
    for entry, hits in verdict.accepted.items():
        if hits:
            print(f"accepted ({entry.gap}): {len(hits)} x {entry.address} {entry.attribute}")
    return verdict


# What runs after `invoke up --all` with the apply's outputs (localcluster/rehearsal.py: the deploys on a real
# control plane): (cluster, roots, Terraform output folder, work folder, steps) -> summary lines; a UserError fails.
AfterApply = Callable[[Cluster, list[str], Path, Path, Steps], list[str]]


def main(
    argv: list[str] | None = None,
    after_apply: AfterApply | None = None,
    prog: str = "python -m provision.terraform.day_one",
) -> int:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default=None, help="the cluster spec (default: cluster.yaml)")
    ap.add_argument("--out", default=str(REPO / "build" / "day-one"), help="work folder (emptied first)")
    args = ap.parse_args(argv)
    try:
        return _rehearse(load_spec(args.spec), args.spec, Path(args.out), after_apply)
    except UserError as e:
        print("\n".join(e.lines), file=sys.stderr)
        return 1


def _rehearse(cluster: Cluster, spec: str | None, work: Path, after_apply: AfterApply | None = None) -> int:
    plugin_dir = mirror.plugin_dir()
    if plugin_dir is None:
        raise UserError(
            "day-one: no hashicorp/aws mirror on this machine (Terraform's plugin directories, /opt/tf-plugins or "
            "LAB_TF_PLUGIN_DIR): the rehearsal runs the real provider offline"
        )
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    out = work / "terraform"
    names = roots(cluster)
    steps = Steps()
    proc, url, ca = steps.run("start the embedded AWS", lambda: start_server(work))
    try:
        os.environ["AWS_CA_BUNDLE"] = ca
        endpoint.use(url)
        # no real cluster is touched: `invoke up` finds no API (its deploys are rehearsed by AFTER_APPLY, on a
        # local control plane, with the apply's outputs); images by tag do not stop it
        env = dict(os.environ) | {"KUBECONFIG": str(work / "no-cluster.kubeconfig"), BY_TAG_ENV: "1"}
        env |= steps.run(
            "the operator's first steps on the account", lambda: prepare_account(cluster, out, work / "admin")
        )
        os.environ.update({k: v for k, v in env.items() if k.startswith("TF_VAR_")})
        common = ["--endpoint", url, *(["--spec", spec] if spec else [])]
        tf = [*common, "--out", str(out), "--plugin-dir", str(plugin_dir)]
        steps.run("invoke bootstrap-state", lambda: invoke("bootstrap-state", *common, env=env))
        steps.run("invoke preflight", lambda: invoke("preflight", *common, env=env))
        steps.run("invoke up --all", lambda: invoke("up", "--all", "--yes", *tf, env=env))
        applied = {name: managed_resources(out / name) for name in names}
        from provision.terraform.outputs import applied as applied_outputs

        outputs = applied_outputs(names, out)
        deployed = after_apply(cluster, names, out, work, steps) if after_apply else []
        verdict = steps.run(
            "second plan", lambda: second_plan(cluster, names, out, url, plugin_dir, work / "second-plan")
        )
        if not verdict.converged:
            raise UserError(
                [
                    f"day-one: the second plan shows {len(verdict.drift)} changes that no moto gap of "
                    f"{drift.DRIFT.name} explains and {len(verdict.stale)} entries of it that no longer "
                    f"occur (each root's plan in {work / 'second-plan'}):",
                    *verdict.problems(),
                ]
            )
        # automation's answers to down's questions: --yes (the cluster's name), --delete-data (the buckets'
        # objects), --kill-jobs (no cluster answers, so no job can be checked: there is none here); a person is
        # still asked each of them
        down = ["down", "--all", "--yes", "--delete-data", "--kill-jobs", *tf]
        steps.run("invoke down --all", lambda: invoke(*down, env=env))
        left = sorted({e.address for e in rehearsal.load()})
        print("day-one: converged and torn down")
        print("resources applied per root: " + ", ".join(f"{n} {c}" for n, c in applied.items()))
        print(f"left out ({len(left)}, provision/terraform/data/rehearsal_left_out.yaml): {', '.join(left)}")
        print("outputs for the deploys (provision/terraform/outputs.applied): " + ", ".join(sorted(outputs)))
        print("\n".join(deployed or ["the deploys after the apply: not rehearsed (make day-one runs them)"]))
        print("timings:\n" + "\n".join(steps.report()))
        return 0
    finally:
        proc.terminate()
        try:
            proc.wait(60)  # the server ends its requests first; slow on loaded cores
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


if __name__ == "__main__":
    sys.exit(main())
