"""invoke tasks: each parses its arguments and calls the `provision` or `autoscaler` package.

`invoke --list` shows them all; `invoke --help TASK` shows a task's options.
"""

from invoke import task

from provision.cli_support import no_h_shortflag, number, user_errors


# --- the spec ---------------------------------------------------------------------------------------------
@task(help={"spec": "path of the cluster spec (default: cluster.yaml)",
            "json": "one JSON object on stdout: ok and the spec's figures, or ok false and the problems"})  # fmt: skip
@user_errors
def validate(c, spec=None, json=False):
    """Check the cluster spec; one line per problem and exit status 2 when it is invalid."""
    from clusterspec.loader import load_spec
    from provision.cli_support import print_json
    from provision.report import summary, summary_data

    if json:
        print_json(lambda: {"ok": True, **summary_data(load_spec(spec))})
        return
    print(f"ok: {summary(load_spec(spec))}")


@task(name="plan-addresses", help={"spec": "path of the cluster spec (default: cluster.yaml)"})
@user_errors
def plan_addresses(c, spec=None):
    """Print the address plan: every VPC, subnet per zone, site, VPN pool, pod and service network."""
    from clusterspec.loader import load_spec
    from provision.report import print_address_plan

    print_address_plan(load_spec(spec))


@task(
    help={
        "spec": "path of the cluster spec (default: cluster.yaml)",
        "out": "logs and plot (build/demo)",
        "compression": "model seconds per wall second, at least 1 (default 60; 15 runs four times slower)",
    }
)
@user_errors
def demo(c, spec=None, out=None, compression=None):
    """The real autoscaler on an embedded AWS (moto) and the real local control plane, a bursty workload (docs/demo.md)."""
    from demos.cluster import main

    main(spec, out, compression)


@task(
    name="sim-vs-real",
    help={
        "spec": "path of the cluster spec (default: cluster.yaml)",
        "out": "logs, plot and phases.json (build/sim-vs-real)",
        "compression": "model seconds per wall second, at least 1 (default 5: where the stack keeps up on 2 cores)",
    },
)
@user_errors
def sim_vs_real(c, spec=None, out=None, compression=None):
    """The demo less compressed, the simulator's replay held to it: nodes, decisions and waits (demos/sim_vs_real.py; ~5 min)."""
    from demos.cluster import main

    main(spec, out or "build/sim-vs-real", compression or "5", hold=True)


# --- simulator (issues 7, 13; docs/simulator.md) --------------------------------------------------------------
@task(
    help={
        "trace": "job trace: a CSV path or a shipped trace (week, ee9e8c; default: week)",
        "scenario": "a generated scenario instead of a trace: burst",
        "policies": "comma-separated, each optionally @default or @bin-packing (default: every policy, and "
        "batch@default)",
        "scheduler": "scheduler profile for policies without @: bin-packing (deployed) or default",
        "window": "only the jobs submitted in the trace's first WINDOW hours",
        "without_gpu": "leave out the node groups of these GPU models (e.g. t4): a sensitivity run",
        "spec": "path of the cluster spec (default: cluster.yaml)",
        "json": "write the figures as JSON to this file",
        "report": "write an HTML report (plots and table) into this directory",
        "workers": "processes running policies side by side (default: one per core, at most 2)",
    }
)
@user_errors
def simulate(c, trace=None, scenario=None, policies=None, scheduler="bin-packing", window=None, spec=None,
             json=None, report=None, workers=None, without_gpu=None):  # fmt: skip
    """Replay a job trace (or the burst scenario) through the cluster model under each scaling policy."""
    from simulator.simulate import DEFAULT_POLICIES, main

    main(trace, scenario, policies or DEFAULT_POLICIES, spec, json, report,
         number(workers, "--workers", "a number of processes, e.g. 2", int),
         scheduler, number(window, "--window", "a number of hours, e.g. 24"), without_gpu)  # fmt: skip


@task(
    name="render-scheduler",
    help={
        "spec": "path of the cluster spec (default: cluster.yaml)",
        "out": "output directory (build/scheduler)",
    },
)
@user_errors
def render_scheduler(c, spec=None, out=None):
    """Render the scheduler profile (docs/scheduler.md): control-plane config, kubeadm fields, gang scheduler."""
    from pathlib import Path

    from clusterspec.loader import load_spec
    from provision.scheduler import OUT, write

    for name, path in write(load_spec(spec), Path(out) if out else OUT).items():
        print(f"{name}: {path}")


@task(name="deploy-scheduler", help={"spec": "path of the cluster spec (default: cluster.yaml)"})
@user_errors
def deploy_scheduler(c, spec=None):
    """Apply the gang scheduler (scheduler-plugins Coscheduling) and its PodGroup CRD with kubectl."""
    from clusterspec.loader import load_spec
    from provision.cluster_addons import deploy_scheduler as deploy

    for line in deploy(load_spec(spec)):
        print(line)


# --- Terraform (issue 5; docs/terraform.md) ----------------------------------------------------------------
_TF_HELP = {
    "region": "one root: a region of the spec, or global",
    "all": "every root: global, then the regions in spill-over order (down: the reverse)",
    "spec": "path of the cluster spec (default: cluster.yaml)",
    "out": "output directory (default: build/terraform)",
    "state_bucket": "S3 state bucket (default: <cluster>-terraform-state)",
    "plugin_dir": "air-gapped: a `terraform providers mirror` directory instead of the registry",
    "yes": "do not ask for confirmation (automation)",
    "endpoint": "rehearsal: an embedded AWS on this machine (e.g. https://127.0.0.1:5000, the moto server) for "
    "the provider, the state and boto3, with dummy credentials (docs/terraform.md, make day-one)",
}


def _use_endpoint(endpoint):
    """--endpoint URL: this process (boto3) and the Terraform it starts talk to the embedded AWS only."""
    if not endpoint:
        return None
    from provision.terraform import endpoint as embedded

    url = embedded.check_url(endpoint)
    embedded.use(url)
    return url


def _tf_args(spec, region, all, out):
    from pathlib import Path

    from clusterspec.loader import load_spec
    from provision.terraform.commands import selected_roots
    from provision.terraform.settings import DEFAULT_OUT

    cluster = load_spec(spec)
    return cluster, selected_roots(cluster, region, all), Path(out) if out else DEFAULT_OUT


@task(help={k: _TF_HELP[k] for k in ("region", "spec", "out", "state_bucket")})
@user_errors
def render(c, region=None, spec=None, out=None, state_bucket=None):
    """Render the Terraform roots from the spec: build/terraform/<region>/ and build/terraform/global/."""
    from pathlib import Path

    from clusterspec.loader import load_spec
    from provision.terraform.commands import render_roots
    from provision.terraform.settings import DEFAULT_OUT

    cluster = load_spec(spec)
    render_roots(cluster, [region] if region else None, Path(out) if out else DEFAULT_OUT, state_bucket)


@task(
    help={k: _TF_HELP[k] for k in ("region", "all", "spec", "out", "state_bucket", "plugin_dir", "endpoint")}
)
@user_errors
def plan(c, region=None, all=False, spec=None, out=None, state_bucket=None, plugin_dir=None, endpoint=None):
    """Render, init and plan Terraform roots (a dry run of `up`); nothing is changed."""
    from provision.terraform import commands

    url = _use_endpoint(endpoint)
    cluster, names, out = _tf_args(spec, region, all, out)
    commands.plan(cluster, names, out, state_bucket, plugin_dir, url=url)


@task(name="check-terraform", help={k: _TF_HELP[k] for k in ("spec", "out")})
@user_errors
def check_terraform(c, spec=None, out=None):
    """Check every module and rendered root against the AWS provider's schema and the AWS APIs' value rules
    (offline); one line per problem, exit status 2 when there is any."""
    from pathlib import Path

    from clusterspec.errors import UserError
    from clusterspec.loader import load_spec
    from provision.terraform.mirror import check_schema
    from provision.terraform.schema_check import run
    from provision.terraform.settings import DEFAULT_OUT, MODULES, REPO

    schema, which = check_schema()
    print(f"schema: {which}")
    problems = run(load_spec(spec), Path(out) if out else DEFAULT_OUT, MODULES, schema, REPO)
    if problems:
        raise UserError(f"{len(problems)} problems; fix them before `invoke plan` or `invoke up`")


def _preflight(cluster, names, state_bucket, out=None) -> None:
    from clusterspec.errors import UserError
    from provision import preflight

    problems = preflight.run(cluster, names, state_bucket, out_dir=out)
    for line in problems:
        print(line)
    if problems:
        raise UserError(
            f"preflight: {len(problems)} problems on this account; fix them first (docs/terraform.md)"
        )
    print(f"preflight: the account is ready for {', '.join(names)}")


@task(help={k: _TF_HELP[k] for k in ("region", "spec", "state_bucket", "endpoint")}
      | {"json": "one JSON object on stdout: ok, the roots checked and the problems (one line each)"})  # fmt: skip
@user_errors
def preflight(c, region=None, spec=None, state_bucket=None, endpoint=None, json=False):
    """What the account needs before the first apply (quotas, the baked image, certificates, Block Public Access,
    the state bucket): one line per problem, exit status 2 when there is any; every root unless --region."""
    from clusterspec.loader import load_spec
    from provision.cli_support import print_json
    from provision.preflight import run
    from provision.terraform.commands import selected_roots

    if not json:
        _use_endpoint(endpoint)
        cluster = load_spec(spec)
        _preflight(cluster, selected_roots(cluster, region, not region), state_bucket)
        return

    def result() -> dict:
        _use_endpoint(endpoint)
        cluster = load_spec(spec)
        names = selected_roots(cluster, region, not region)
        problems = run(cluster, names, state_bucket)
        return {"ok": not problems, "cluster": cluster.name, "roots": names, "problems": problems}

    print_json(result)


@task(help=_TF_HELP)
@user_errors
def up(c, region=None, all=False, spec=None, out=None, state_bucket=None, plugin_dir=None, yes=False,
       endpoint=None):  # fmt: skip
    """Preflight, then render, plan and apply Terraform roots; lists disruptive changes (deletions, replacements,
    updates of instances, groups, launch templates, the control plane, VPN connections, lowered maxima) and asks
    first."""
    from provision.cluster_addons import after_up
    from provision.terraform import commands

    url = _use_endpoint(endpoint)
    cluster, names, out = _tf_args(spec, region, all, out)
    _preflight(cluster, names, state_bucket, out)
    commands.up(cluster, names, out, state_bucket, plugin_dir, yes=yes, url=url)
    for line in after_up(cluster, names):
        print(line)


@task(
    help=_TF_HELP
    | {
        "dry_run": "only plan the destruction and print what would go",
        "wait": "wait this long for running jobs on the nodes going (e.g. 2h; default: show them and ask)",
        "kill_jobs": "with --yes: destroy even though jobs still run",
        "delete_data": "with --yes: empty the buckets, image repositories and backup vaults that go",
        "kubeconfig": "the admin's kubeconfig (default: KUBECONFIG, else ~/.kube/config)",
    }
)
@user_errors
def down(
    c,
    region=None,
    all=False,
    spec=None,
    out=None,
    state_bucket=None,
    plugin_dir=None,
    yes=False,
    dry_run=False,
    wait=None,
    kill_jobs=False,
    delete_data=False,
    kubeconfig=None,
    endpoint=None,
):
    """Destroy Terraform roots: shows the destroy plan, the running jobs and the data that would go, asks for the
    cluster's name (and once more for data), cordons the nodes and waits for or asks about running jobs, removes
    scale-in protection only then, empties buckets and repositories, and removes the scripts' SSM parameters."""
    import boto3

    from autoscaler.options import parse_duration
    from provision.operations.teardown import Teardown, connect
    from provision.terraform import commands

    url = _use_endpoint(endpoint)
    cluster, names, out = _tf_args(spec, region, all, out)
    teardown = Teardown(cluster, names, connect(kubeconfig), boto3.Session(region_name=cluster.primary_region),
                        yes=yes, wait_s=parse_duration(wait) if wait else 0, kill_jobs=kill_jobs,
                        delete_data=delete_data)  # fmt: skip
    commands.down(cluster, names, out, state_bucket, plugin_dir, yes=yes, dry_run=dry_run, teardown=teardown,
                  url=url)  # fmt: skip


@task(name="bootstrap-state", help={k: _TF_HELP[k] for k in ("spec", "state_bucket", "endpoint")})
@user_errors
def bootstrap_state(c, spec=None, state_bucket=None, endpoint=None):
    """Create the Terraform state bucket in the primary region (locks are S3 lock files; idempotent)."""
    from clusterspec.loader import load_spec
    from provision.terraform.bootstrap import bootstrap_state as create
    from provision.terraform.settings import Backend

    _use_endpoint(endpoint)
    cluster = load_spec(spec)
    backend = Backend.for_cluster(cluster.name, cluster.primary_region, state_bucket)
    for name, state in create(backend).items():
        print(f"{name}: {state}")


@task(
    name="control-plane-status",
    help={"spec": "path of the cluster spec (default: cluster.yaml)", "kubeconfig": "the admin's kubeconfig"},
)
@user_errors
def control_plane_status(c, spec=None, kubeconfig=None):
    """What each control-plane member reported while bootstrapping, and every cluster instance that is no Node
    (exit 1 on a failed or missing member or a node that never joined, 3 while one is still joining)."""
    from datetime import UTC, datetime

    from invoke.exceptions import Exit

    from clusterspec.loader import load_spec
    from provision import control_plane_status as cps

    cluster = load_spec(spec)
    lines, code = cps.report(*cps.read_status(cluster))
    ids = cps.node_provider_ids(kubeconfig)
    unjoined = None
    if ids is not None:
        unjoined = cps.unjoined_nodes(cluster, cps.cluster_instances(cluster), ids, datetime.now(UTC))
    node_lines, node_code = cps.report_nodes(unjoined, cluster.autoscaler.boot_timeout_s)
    print("\n".join(lines + node_lines))
    code = 1 if 1 in (code, node_code) else max(code, node_code)
    if code:
        raise Exit(code=code)


# --- machine images (issue 6) ------------------------------------------------------------------------------
@task(
    name="bake-ami",
    help={
        "region": "AWS region to bake in (default: the primary region)",
        "local": "bake against a moto server on 127.0.0.1: no AWS, no scripts run (docs/images.md)",
        "spec": "path of the cluster spec (default: cluster.yaml)",
        "ssh_from": "where Packer's SSH to the build instance comes from (default: this machine's public address /32)",
    },
)
@user_errors
def bake_ami(c, region=None, local=False, spec=None, ssh_from=None):
    """Bake the GPU worker AMI once, copy it to every region; record build/ami/<region>.json, SSM and the package lock."""
    from clusterspec.loader import load_spec
    from provision.packer.bake import bake
    from provision.packer.progress import packer_progress
    from provision.packer.variables import check_region

    cluster = load_spec(spec)
    region = check_region(cluster, region or cluster.primary_region)
    with packer_progress(f"bake-ami {region}{' (local)' if local else ''}") as on_event:
        done = bake(cluster, region, local=local, on_event=on_event, ssh_from=ssh_from)
    print(
        f"baked {done['ami_id']} ({done['name']}) from {done['source_ami']}, copied to "
        f"{', '.join(done['regions'])}: {done['file']}, SSM {done['ssm_parameter']}"
        + (f", package lock {done['package_lock']}" if done["package_lock"] else " (local: no package lock)")
    )


@task(
    name="chef-attributes",
    help={
        "site": "the physical site (cluster.yaml: sites[].name)",
        "spec": "path of the cluster spec (default: cluster.yaml)",
        "outputs": "directory of Terraform outputs (default: build/terraform; <region>/outputs.json)",
        "placeholders": "use documentation addresses when Terraform has not run (a dry run, never a real VPN)",
    },
)
@user_errors
def chef_attributes(c, site, spec=None, outputs=None, placeholders=False):
    """Write build/chef/<site>.json (node attributes) and copy the image scripts into the cookbook."""
    from pathlib import Path

    from clusterspec.loader import load_spec
    from provision.chef.attributes import write_node_attributes
    from provision.chef.outputs import OUTPUTS_DIR

    out = write_node_attributes(
        load_spec(spec), site, Path(outputs) if outputs else OUTPUTS_DIR, placeholders=placeholders
    )
    print(f"wrote {out}" + (" (placeholder VPN endpoints: not for a real converge)" if placeholders else ""))


@task(
    name="deploy-addons",
    help={
        "spec": "path of the cluster spec (default: cluster.yaml)",
        "dry_run": "only render build/deploy/addons.yaml and print it",
    },
)
@user_errors
def deploy_addons(c, spec=None, dry_run=False):
    """Apply the GPU add-ons (NVIDIA device plugin, DCGM exporter, EFA device plugin) rendered from the spec."""
    from clusterspec.loader import load_spec
    from provision.addons import deploy_addons as deploy

    path = deploy(load_spec(spec), dry_run=dry_run)
    if dry_run:
        print(path.read_text(), end="")
    else:
        print(f"applied {path}")


@task(name="deploy-tenancy", help={"spec": "path of the cluster spec (default: cluster.yaml)",
                                   "dry_run": "render and print; apply nothing"})  # fmt: skip
@user_errors
def deploy_tenancy(c, spec=None, dry_run=False):
    """Apply what keeps researchers in their namespaces (issue 26, docs/researchers.md "Tenancy"): the admission
    policy for their pods, kube-router's network policy controller, the pod gateways' identity pods."""
    from clusterspec.loader import load_spec
    from provision import tenancy

    path = tenancy.deploy(load_spec(spec), dry_run=dry_run)
    if dry_run:
        print(path.read_text(), end="")
    else:
        print(f"applied {path}")


@task(
    name="pin-images",
    help={
        "refresh": "look every image up again, not only those without a digest (a moved tag is said)",
        "image": "only this image (repeatable; as provision/data/images.yaml names it)",
    },
    iterable=["image"],
)
@user_errors
def pin_images(c, refresh=False, image=None):
    """Record each deployed image's digest from its registry in provision/data/images.yaml (the deploys refuse tags)."""
    from provision.pin_images import pin_images as pin

    for line in pin(refresh=refresh, only=image or None):
        print(line)


@task(name="push-autoscaler", help={"spec": "path of the cluster spec (default: cluster.yaml)"})
@user_errors
def push_autoscaler(c, spec=None):
    """Build deploy/Dockerfile, push it to the lab's ECR repository and record its digest (read back with
    credentials) in provision/data/images.yaml; needs a Docker engine."""
    from clusterspec.loader import load_spec
    from provision import lab_images

    pushed = lab_images.push_autoscaler(load_spec(spec))
    print(f"pushed {pushed.image}: {pushed.digest}; recorded in provision/data/images.yaml (commit it)")


@task(name="push-standard-image", help={"spec": "path of the cluster spec (default: cluster.yaml)"})
@user_errors
def push_standard_image(c, spec=None):
    """Build deploy/standard-image for the spec and push it to the lab's ECR repository, where the GPU image's bake
    pre-pulls it; needs a Docker engine."""
    from clusterspec.loader import load_spec
    from provision import lab_images

    pushed = lab_images.push_standard(load_spec(spec))
    print(f"pushed {pushed.image}: {pushed.digest}")


@task(name="mirror-images", help={"spec": "path of the cluster spec (default: cluster.yaml)"})
@user_errors
def mirror_images(c, spec=None):
    """Copy every third-party image, by its pinned digest, into the lab's ECR mirrors (crane or skopeo)."""
    from clusterspec.loader import load_spec
    from provision import lab_images

    for line in lab_images.mirror_images(load_spec(spec)):
        print(line)


# --- autoscaler planner (issue 3; docs/planner.md) ------------------------------------------------------------
@task(
    help={
        "json": "print the figures as JSON lines",
        "no_process": "skip the runs at real object sizes (whole `autoscaler plan` processes, in-core drivers)",
        "no_cases": "skip the generated cases (lean objects, in this process)",
        "pods": "pending pods at real sizes (default 51,000)",
        "nodes": "existing nodes at real sizes, 3 pods each (default 3,000)",
        "baseline": "also run the real-size processes on this git ref's code and print new/baseline ratios",
        "repeat": "run each real-size measurement this many times and keep the least of each figure",
    }
)
def bench(c, json=False, no_process=False, no_cases=False, pods=51_000, nodes=3_000, baseline=None, repeat=1):
    """Benchmark the planner: generated cases, and lean against kubectl-sized objects (docs/benchmarks.md)."""
    import argparse

    from autoscaler.commands.bench import run

    args = dict(json=json, no_process=no_process, no_cases=no_cases, pods=pods, nodes=nodes, baseline=baseline,
                repeat=repeat)  # fmt: skip
    if run(argparse.Namespace(**args)):
        raise SystemExit(2)


@task(
    name="bench-live",
    help={
        "nodes": "kwok nodes on the real local control plane (default 5,000)",
        "pods": "kubectl-sized running pods spread over them (default 50,000)",
        "loops": "controller passes to watch (default 100)",
        "samples": "decision latency samples (default 5)",
        "events": "pods owed an Event in each burst (default 500)",
        "workers": "concurrent API writes while loading (default 16)",
        "out": "the stack's folder, the controller's log and result.json (build/bench-live)",
        "json": "print the result as one JSON object",
        "batch_idle": "the autoscaler's --batch-idle (default: its own, 1s); several, comma-separated (1s,250ms): "
        "one controller each on the same loaded cluster",
        "lone_pod_idle": "the autoscaler's --lone-pod-idle (default: its own, 100ms); several, comma-separated "
        "(100ms,1s: both ends of the setting): one controller each on the same loaded cluster",
        "scan_interval": "the autoscaler's --scan-interval (default: its own, 10s); several, comma-separated (10s,1s: "
        "1s runs passes back to back): one controller each on the same loaded cluster",
    },
)
def bench_live(
    c,
    nodes=5_000,
    pods=50_000,
    loops=100,
    samples=5,
    events=500,
    workers=16,
    out=None,
    json=False,
    batch_idle=None,
    lone_pod_idle=None,
    scan_interval=None,
):
    """The live controller on the real control plane: decision latency and memory (docs/benchmarks.md)."""
    from demos.bench_live import main

    argv = [f"--nodes={nodes}", f"--pods={pods}", f"--loops={loops}", f"--samples={samples}", f"--events={events}",
            f"--workers={workers}", *([f"--out={out}"] if out else []), *(["--json"] if json else []),
            *([f"--batch-idle={batch_idle}"] if batch_idle else []),
            *([f"--lone-pod-idle={lone_pod_idle}"] if lone_pod_idle else []),
            *([f"--scan-interval={scan_interval}"] if scan_interval else [])]  # fmt: skip
    code = main(argv)
    if code:
        raise SystemExit(code)


@task(
    name="bench-peers",
    help={
        "small": "the CI size: three small bursts, ours, Karpenter in the primary region and idealised",
        "scenario": "only this burst (repeatable): demo-1 demo-60 demo-320 burst-2000 gang-16x8 delete-2s",
        "peer": "only this autoscaler (repeatable): ours, karpenter-<region>, karpenter-ideal",
        "out": "figures, table, plot and every run's logs (build/bench-peers)",
        "idle_s": "seconds a node stays idle before removal, for both (default 30)",
        "after_s": "seconds after the pods vanished to count the nodes still up (default 60)",
        "spec": "path of the cluster spec (default: cluster.yaml)",
    },
    iterable=["scenario", "peer"],
)
@user_errors
def bench_peers(c, small=False, scenario=None, peer=None, out=None, idle_s=30, after_s=60.0, spec=None):
    """Ours and Karpenter (kwok provider) on the same bursts, each from a fresh local stack: a table and a plot."""
    from demos.bench_peers.run import main

    main(small, scenario or None, peer or None, out, int(idle_s), float(after_s), spec_path=spec)


# --- autoscaler deployment (issue 4; docs/autoscaler.md) -------------------------------------------------------
@task(
    name="deploy-autoscaler",
    help={
        "spec": "path of the cluster spec (default: cluster.yaml)",
        "dry_run": "print the manifests instead of applying them",
        "role_arn": "the autoscaler's IAM role (default: the global Terraform root's autoscaler_role_arn output)",
    },
)
@user_errors
def deploy_autoscaler(c, spec=None, dry_run=False, role_arn=None):
    """Render the autoscaler's manifests from the spec and apply them with kubectl (non-zero exit if not).

    Its exit status is non-zero whenever nothing was deployed: no kubectl, no reachable cluster, a failed apply,
    or no AWS role (the global Terraform root's outputs or --role-arn)."""
    from provision.deploy import deploy

    deploy(spec, role_arn, dry_run)


# --- researchers (issue 15; docs/researchers.md) ---------------------------------------------------------------
@task(
    name="vpn-ca",
    auto_shortflags=False,  # -h is help (--home has no short flag)
    help={
        "home": "where the VPN CA lives (default: ~/.local/share/research-cluster)",
        "out": "Terraform output directory the ARNs go to (default: build/terraform)",
        "renew": "import a new server certificate at the same ARN",
        "spec": "path of the cluster spec (default: cluster.yaml)",
    },
)
@user_errors
def vpn_ca(c, home=None, out=None, renew=False, spec=None):
    """Make the Client VPN's CA and server certificate (RSA 2048) and import them into ACM before the first `up`."""
    from pathlib import Path

    from clusterspec.loader import load_spec
    from provision import vpn_ca as ca
    from provision.terraform.settings import DEFAULT_OUT

    for line in ca.run(
        load_spec(spec), Path(out) if out else DEFAULT_OUT, Path(home) if home else None, renew
    ):
        print(line)


@task(
    name="add-user",
    help={
        "name": "the user, as listed in the spec's users",
        "kubeconfig": "the admin's kubeconfig (default: KUBECONFIG, else ~/.kube/config)",
        "home": "where keys, kubeconfigs and the VPN CA live (default: ~/.local/share/research-cluster)",
        "role_arn": "the user's S3 role (Terraform global output researcher_role_arns) for their pods",
        "spec": "path of the cluster spec (default: cluster.yaml)",
    },
)
@user_errors
def add_user(c, name, kubeconfig=None, home=None, role_arn=None, spec=None):
    """Namespace, RBAC, volume claims, a kubeconfig (CSR API) and a Client VPN certificate for a researcher."""
    from clusterspec.loader import load_spec
    from provision.users import add_user as add

    added = add(load_spec(spec), name, kubeconfig, home, role_arn=role_arn)
    print(f"{name}: namespace {added.namespace}; created {', '.join(added.created) or 'nothing new'}")
    print(f"kubeconfig {added.kubeconfig}; VPN certificate {added.vpn_cert} and key {added.vpn_key}")
    if added.aws_config:
        print(
            f"AWS profile {added.aws_config} (IAM Roles Anywhere with the VPN certificate; `lab submit` uploads with it)"
        )
    else:
        print(
            "no AWS profile yet: `invoke vpn-ca`, then `invoke up --region global` makes the researchers' trust anchor"
        )
    print("hand these to the user privately; docs/researchers.md is their next step")
    print(
        "their claims bind once their EFS access points exist: `invoke up` (primary region), then "
        "`invoke render-storage --efs-id fs-...` and apply build/deploy/storage/volumes.yaml"
    )


@task(
    name="lab-settings",
    help={
        "kubeconfig": "the admin's kubeconfig (default: KUBECONFIG, else ~/.kube/config)",
        "out": "write the settings document to this file instead (for `lab --settings FILE`)",
        "registry": "the registry host (default: researchers.registry; Terraform output registry_host)",
        "code_bucket": "where `lab` uploads code (default: the global root's bucket_names.results)",
        "spec": "path of the cluster spec (default: cluster.yaml)",
    },
)
@user_errors
def lab_settings(c, kubeconfig=None, out=None, registry=None, code_bucket=None, spec=None):
    """Publish what `lab` reads from the cluster: ConfigMap kube-public/research-lab-settings, readable by researchers."""
    from pathlib import Path

    from clusterspec.loader import load_spec
    from provision import lab_settings as ls

    cluster = load_spec(spec)
    bucket = code_bucket or ls.results_bucket(cluster)
    if out:
        Path(out).write_text(ls.document(cluster, registry, bucket))
        print(f"wrote {out}; researchers use it with `lab --settings {out}` (or LAB_SETTINGS)")
        return
    from kubernetes import config

    api = config.new_client_from_config(config_file=kubeconfig)
    try:
        for line in ls.apply(api, cluster, registry, bucket):
            print(line)
    finally:
        api.close()


@task(
    name="remove-user",
    help={
        "name": "the user",
        "kubeconfig": "the admin's kubeconfig",
        "home": "where the VPN CA lives (default: ~/.local/share/research-cluster)",
        "vpn_endpoint": "Client VPN endpoint id to import the revocation list into",
        "region": "the endpoint's region (default: the primary region)",
        "dry_run": "show what would be deleted and revoked, change nothing",
        "yes": "do not ask for confirmation (automation)",
        "spec": "path of the cluster spec (default: cluster.yaml)",
    },
)
@user_errors
def remove_user(c, name, kubeconfig=None, home=None, vpn_endpoint=None, region=None, dry_run=False, yes=False,
                spec=None):  # fmt: skip
    """Delete a researcher's bindings and namespace (after confirmation) and revoke their VPN certificate."""
    import sys

    from clusterspec.errors import UserError
    from clusterspec.loader import load_spec
    from provision.users import remove_plan
    from provision.users import remove_user as remove

    cluster = load_spec(spec)
    print("\n".join(f"  {line}" for line in remove_plan(cluster, name)))
    if dry_run:
        print("dry run: nothing changed")
        return
    if not yes:
        if not sys.stdin.isatty():
            raise UserError(
                f"remove-user {name}: no terminal to confirm on; pass --yes to proceed unattended"
            )
        if input(f"type {name} to remove them: ").strip() != name:
            raise UserError("not confirmed; nothing was changed")
    for line in remove(cluster, name, kubeconfig, home, vpn_endpoint, region):
        print(line)


@task(name="bench-iteration", help={"json": "print the figures as JSON",
                                     "compression": "model seconds per wall second of the node boot (default 60)"})  # fmt: skip
@user_errors
def bench_iteration(c, json=False, compression=None):
    """Code edit to every pod Running on the real local stack (the real autoscaler, process-kubelet nodes): warm node and new node."""
    from demos.bench_iteration import main

    main(json, compression=compression)


@task(
    name="local-cluster",
    help={
        "spec": "path of the cluster spec (default: cluster.yaml)",
        "out": "logs and alice's kubeconfig (build/local-cluster)",
    },
)
@user_errors
def local_cluster(c, spec=None, out=None):
    """A local cluster to try `lab` on your own code: moto, the real control plane (its nodes run jobs as processes), the autoscaler, alice; until Ctrl-C."""
    from demos.local_cluster import main

    main(spec, out)


@task(
    name="local-cluster-idle",
    help={
        "window": "seconds measured (default 120)",
        "settle": "seconds waited after start-up before measuring (default 60)",
        "max_percent": "exit 1 when the total is over this share of one core (e.g. 5)",
        "spec": "path of the cluster spec (default: cluster.yaml)",
        "out": "logs (build/local-cluster-idle)",
    },
)
@user_errors
def local_cluster_idle(c, window=None, settle=None, max_percent=None, spec=None, out=None):
    """What the idle local cluster costs: CPU seconds per process over a window, the table and the total."""
    from demos.local_cluster_idle import main

    settle_s = number(settle, "--settle", "seconds", positive=False)
    main(spec, out, number(window, "--window", "seconds") or 120.0, 60.0 if settle_s is None else settle_s,
         number(max_percent, "--max-percent", "a share of one core in percent"))  # fmt: skip


@task(
    name="demo-researcher",
    help={"spec": "path of the cluster spec (default: cluster.yaml)", "out": "logs (build/demo-researcher)"},
)
@user_errors
def demo_researcher(c, spec=None, out=None):
    """The researcher's path on the local cluster: the code uploaded, a 16-GPU gang submitted, scale-up, running, TensorBoard."""
    from demos.researcher import main

    main(spec, out)


@task(
    name="render-storage",
    help={
        "efs_id": "the primary region's EFS file system (fs-...; Terraform output efs_file_system_id)",
        "out": "output folder (default: build/deploy/storage)",
        "spec": "path of the cluster spec (default: cluster.yaml)",
        "csi_role_arn": "the EFS CSI driver's role (default: the global root's output efs_csi_role_arn)",
    },
)
@user_errors
def render_storage(c, efs_id, out="build/deploy/storage", spec=None, csi_role_arn=None):
    """Render the EFS CSI node plugin and every researcher's volumes, each through its EFS access point
    (looked up with DescribeAccessPoints; deploy/storage/README.md)."""
    from pathlib import Path

    from clusterspec.loader import load_spec
    from provision.storage import csi_role_arn as global_csi_role_arn
    from provision.storage import lookup_access_points, write_storage
    from provision.storage import render_storage as render

    cluster = load_spec(spec)
    role = csi_role_arn or global_csi_role_arn()
    efs = lookup_access_points(cluster, efs_id, cluster.primary_region)
    for path in write_storage(render(cluster, efs, role), Path(out)):
        print(f"wrote {path}")


@task(
    name="operator-kubeconfig",
    help={
        "name": "your own name (CN of the certificate, what the audit log shows)",
        "duration": "hours the certificate lasts (1 to 12, default 8)",
        "admin_kubeconfig": "the break-glass admin kubeconfig that approves it (default: ~/.kube/<cluster>.conf)",
        "out": "where to write it (default: ~/.kube/<cluster>-<name>.conf)",
        "spec": "path of the cluster spec (default: cluster.yaml)",
    },
)
@user_errors
def operator_kubeconfig(c, name=None, duration=8, admin_kubeconfig=None, out=None, spec=None):
    """Your own short-lived cluster-admin kubeconfig (group research:operators); admin.conf stays break-glass."""
    from pathlib import Path

    from clusterspec.errors import UserError
    from clusterspec.loader import load_spec
    from provision.users import operator_kubeconfig as make

    if not name:
        raise UserError(
            "operator-kubeconfig: give --name NAME (your own name; it is what the audit log shows)"
        )
    hours = int(duration)
    cluster = load_spec(spec)
    admin = admin_kubeconfig or str(Path.home() / ".kube" / f"{cluster.name}.conf")
    path = make(cluster, name, admin, Path(out) if out else Path.home() / ".kube" / f"{cluster.name}-{name}.conf",
                hours)  # fmt: skip
    print(f"wrote {path}: cluster-admin as {name} for {hours} hours (KUBECONFIG={path})")


@task(
    name="publish-oidc",
    help={
        "sa_pub": "a service-account public key file (default: the one member 0 published to SSM)",
        "bucket": "the issuer bucket (default: Terraform global output service_account_issuer_bucket)",
        "spec": "path of the cluster spec (default: cluster.yaml)",
    },
)
@user_errors
def publish_oidc(c, sa_pub=None, bucket=None, spec=None):
    """Publish the OIDC discovery document and JWKS that let AWS STS verify service-account tokens (IRSA)."""
    from pathlib import Path

    from clusterspec.loader import load_spec
    from provision import irsa, operator
    from provision.terraform.outputs import global_output

    cluster = load_spec(spec)
    region = cluster.primary_region
    bucket = bucket or global_output("service_account_issuer_bucket")
    key = Path(sa_pub).read_bytes() if sa_pub else operator.fetch_sa_pub(cluster)
    issuer = irsa.issuer_url(bucket, region)
    for name in irsa.publish(irsa.oidc_documents(key, issuer), bucket, region):
        print(f"published {issuer}/{name}")


@task(
    help={
        "out": "where to write it (default: ~/.kube/<cluster>.conf, mode 0600)",
        "spec": "path of the cluster spec (default: cluster.yaml)",
    },
)
@user_errors
def kubeconfig(c, out=None, spec=None):
    """The admin kubeconfig from SSM (published by control-plane member 0; readable by the operator role)."""
    from pathlib import Path

    from clusterspec.loader import load_spec
    from provision import operator

    cluster = load_spec(spec)
    path = operator.fetch_kubeconfig(
        cluster, Path(out) if out else Path.home() / ".kube" / f"{cluster.name}.conf"
    )
    print(f"wrote {path} (cluster-admin; the API is api.{cluster.domain}:6443, through the Client VPN)")
    print(f"export KUBECONFIG={path}")


@task(
    name="deploy-pod-identity",
    help={
        "kubeconfig": "the admin's kubeconfig",
        "home": "where the webhook CA lives (default: ~/.local/share/research-cluster)",
        "out": "where the manifests go (default: build/deploy/storage)",
        "spec": "path of the cluster spec (default: cluster.yaml)",
    },
)
@user_errors
def deploy_pod_identity(c, kubeconfig=None, home=None, out="build/deploy/storage", spec=None):
    """The pod identity webhook: its TLS Secret created through the API (never on disk), its manifests rendered."""
    from pathlib import Path

    import yaml
    from kubernetes import client, config

    from clusterspec.loader import load_spec
    from provision import irsa
    from provision.users import DEFAULT_HOME

    cluster = load_spec(spec)
    ca, cert, key = irsa.webhook_tls(Path(home or DEFAULT_HOME) / "webhook-ca", cluster.name)
    api = config.new_client_from_config(config_file=kubeconfig)
    core = client.CoreV1Api(api)
    secret = irsa.webhook_secret(cert, key)
    try:
        core.create_namespaced_secret("kube-system", secret)
    except client.exceptions.ApiException as e:
        if e.status != 409:
            raise
        core.replace_namespaced_secret(secret["metadata"]["name"], "kube-system", secret)
    api.close()
    path = Path(out) / "pod-identity-webhook.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(irsa.webhook_manifests(cluster, ca), sort_keys=False))
    print(
        f"Secret kube-system/pod-identity-webhook-tls is in place; apply the webhook: kubectl apply -f {path}"
    )


# --- operations (issue 29; docs/operations.md) -------------------------------------------------------------------
@task(
    name="demo-upgrade",
    help={"spec": "path of the cluster spec (default: cluster.yaml)", "out": "logs (build/demo-upgrade)"},
)
@user_errors
def demo_upgrade(c, spec=None, out=None):
    """A node-group upgrade on the local stack (moto, the real control plane, autoscaler run) that kills no job."""
    from demos.upgrade import main

    main(spec, out)


@task(
    name="etcd-backup",
    help={
        "list": "list the snapshots in the bucket instead (newest first)",
        "spec": "path of the cluster spec (default: cluster.yaml)",
    },
)
@user_errors
def etcd_backup(c, list=False, spec=None):
    """Take an etcd snapshot now (the leader uploads it to S3 under the cluster key), or list the snapshots."""
    from clusterspec.loader import load_spec
    from provision.operations import etcd
    from provision.operations.ssm import SsmRunner, control_plane_members

    cluster = load_spec(spec)
    bucket = etcd.bucket_name(cluster)
    if list:
        for s in etcd.list_snapshots(cluster, bucket):
            print(f"{s.time:%Y-%m-%d %H:%M:%S} UTC  {s.size / 1e6:8.1f} MB  s3://{bucket}/{s.key}")
        return
    members = control_plane_members(cluster)
    print(f"snapshot from {len(members)} control-plane members (the etcd leader takes it) to s3://{bucket}")
    print(etcd.backup(cluster, SsmRunner(cluster.primary_region), members, bucket, etcd.cluster_key(cluster)))


@task(
    name="etcd-restore",
    help={
        "snapshot": "a key in the bucket (snapshots/...), or latest",
        "dry_run": "show what would be done and stop",
        "start": "only put etcd and kube-apiserver back on every member (after a failed stop)",
        "yes": "do not ask for confirmation (automation)",
        "spec": "path of the cluster spec (default: cluster.yaml)",
    },
)
@user_errors
def etcd_restore(c, snapshot="latest", dry_run=False, start=False, yes=False, spec=None):
    """Restore every control-plane member's etcd from one snapshot (docs/operations.md, "etcd")."""
    import sys

    from clusterspec.errors import UserError
    from clusterspec.loader import load_spec
    from provision.operations import etcd
    from provision.operations.ssm import SsmRunner, control_plane_members

    cluster = load_spec(spec)
    members = control_plane_members(cluster)
    runner = SsmRunner(cluster.primary_region)
    if start:
        etcd.start(runner, members)
        print(f"etcd answers on {len(members)} members")
        return
    bucket = etcd.bucket_name(cluster)
    if snapshot == "latest":
        found = etcd.list_snapshots(cluster, bucket)
        if not found:
            raise UserError(f"no snapshot in s3://{bucket}/snapshots/ (invoke etcd-backup takes one)")
        snapshot = found[0].key
    print("\n".join(f"  {line}" for line in etcd.restore_plan(cluster, members, bucket, snapshot)))
    if dry_run:
        print("dry run: nothing changed")
        return
    if not yes:
        if not sys.stdin.isatty():
            raise UserError("etcd-restore: no terminal to confirm on; pass --yes to proceed unattended")
        if input(f"type the cluster name ({cluster.name}) to restore: ").strip() != cluster.name:
            raise UserError("not confirmed; nothing was changed")
    etcd.restore(cluster, runner, members, bucket, snapshot, etcd.cluster_key(cluster))


@task(
    name="etcd-verify",
    help={
        "snapshot": "a snapshot file, or s3://bucket/key (downloaded, its sha256 checked)",
        "spec": "path of the cluster spec (default: cluster.yaml)",
    },
)
@user_errors
def etcd_verify(c, snapshot, spec=None):
    """Restore a snapshot on this machine with a real etcd on loopback and count what it holds (a restore drill)."""
    import tempfile
    from pathlib import Path

    from clusterspec.loader import load_spec
    from provision.operations import etcd

    with tempfile.TemporaryDirectory() as tmp:
        path = etcd.fetch(snapshot, Path(tmp), load_spec(spec))
        got = etcd.verify(path)
    kinds = ", ".join(f"{k} {n}" for k, n in got.by_resource.most_common(12))
    print(f"ok: revision {got.revision}, {got.keys} keys ({kinds})")


@task(
    name="deploy-monitoring",
    help={
        "topic_arn": "the alert topic (default: the global Terraform root's alerts_topic_arn output)",
        "dry_run": "only render build/deploy/monitoring/monitoring.yaml and print its path",
        "spec": "path of the cluster spec (default: cluster.yaml)",
    },
)
@user_errors
def deploy_monitoring(c, topic_arn=None, dry_run=False, spec=None):
    """Prometheus (with the project's alert rules), Alertmanager (to the alert topic), kube-state-metrics and the
    certificate exporters (docs/operations.md, "Alerts")."""
    from clusterspec.loader import load_spec
    from provision.monitoring import deploy

    path = deploy(load_spec(spec), topic_arn, dry_run)
    print(f"{'rendered' if dry_run else 'applied'} {path}")


@task(
    help={
        "home": "where the admin's CAs and the researchers' certificates live (default: ~/.local/share/research-cluster)",
        "aws": "also read what AWS holds: the Client VPN's ACM certificates, the sites' CA (default: on)",
        "publish": "put the public certificates and the revocation list's next update into Prometheus "
        "(the ConfigMap watched-certificates and a rule file), through invoke deploy-monitoring",
        "spec": "path of the cluster spec (default: cluster.yaml)",
    }
)
@user_errors
def certificates(c, home=None, aws=True, publish=False, spec=None):
    """Every certificate and revocation list the cluster depends on, soonest expiry first, with how to renew it
    (exit 1 when one is within operations.certificate_warn_days)."""
    from invoke.exceptions import Exit

    from clusterspec.loader import load_spec
    from provision import monitoring
    from provision.operations import certificates as certs

    cluster = load_spec(spec)
    entries = certs.local_entries(cluster, home) + (certs.aws_entries(cluster) if aws else [])
    lines, code = certs.report(entries, cluster.operations.certificate_warn_days)
    print("\n".join(lines) or "no certificate found (nothing in the admin's folder; --aws for AWS's)")
    print("kubeadm's own (on the control plane): invoke rotate-certificates --kubeadm --check")
    if publish:
        folder, rules = certs.publish_files(entries)
        print(f"published {len(list(folder.glob('*.pem')))} certificates ({folder}) and {rules}")
        print(f"applied {monitoring.deploy(cluster)}")
    if code:
        raise Exit(code=code)


@task(
    name="rotate-certificates",
    help={
        "kubeadm": "kubeadm certs renew all on every control-plane member, one at a time (with --check: only list)",
        "check": "with --kubeadm: kubeadm certs check-expiration on every member, change nothing",
        "vpn_user": "a new Client VPN certificate for this researcher",
        "vpn_server": "a new Client VPN server certificate from the VPN CA, re-imported into ACM at its ARN",
        "crl": "re-sign the Client VPN revocation list and import it into the endpoint",
        "home": "the admin's folder (default: ~/.local/share/research-cluster)",
        "spec": "path of the cluster spec (default: cluster.yaml)",
    },
)
@user_errors
def rotate_certificates(c, kubeadm=False, check=False, vpn_user=None, vpn_server=False, crl=False, home=None,
                        spec=None):  # fmt: skip
    """Renew certificates where the tool supports it (docs/operations.md, "Certificates")."""
    from clusterspec.errors import UserError
    from clusterspec.loader import load_spec
    from provision.operations import certificates as certs
    from provision.operations.ssm import SsmRunner, control_plane_members

    cluster = load_spec(spec)
    if not (kubeadm or vpn_user or vpn_server or crl):
        raise UserError("rotate-certificates: give --kubeadm, --vpn-user NAME, --vpn-server or --crl")
    if kubeadm:
        members = control_plane_members(cluster)
        runner = SsmRunner(cluster.primary_region)
        if check:
            for iid, r in runner.run(
                [m.instance_id for m in members], "kubeadm certs check-expiration", 120
            ).items():
                print(f"--- {iid} ({r.status})\n{r.stdout.strip()}")
        else:
            certs.renew_kubeadm(runner, members)
            print("renewed on every member; fetch the new admin kubeconfig (its certificate changed too)")
    if vpn_user:
        crt, key = certs.renew_vpn_user(cluster, vpn_user, home)
        print(f"{vpn_user}: new VPN certificate {crt} and key {key}; hand them over privately")
    if vpn_server:
        print(f"re-imported a new server certificate at {certs.renew_vpn_server(cluster, home)}")
    if crl:
        path, endpoint = certs.renew_crl(cluster, home)
        print(
            f"re-signed {path}"
            + (f"; imported into {endpoint}" if endpoint else "; no endpoint found to import into")
        )


@task(
    name="ssh-start",
    help={
        "name": "the SSH machine, as lab ssh-config names it (gpu-1, cpu-2)",
        "no_wait": "do not wait until it runs",
        "spec": "path of the cluster spec (default: cluster.yaml)",
    },
)
@user_errors
def ssh_start(c, name, no_wait=False, spec=None):
    """Start an SSH machine that stopped itself while idle (operations.ssh_idle_stop_min)."""
    from clusterspec.loader import load_spec
    from provision.operations.cost import ssh_start as start

    m = start(load_spec(spec), name, wait=not no_wait)
    print(
        f"{m.name} ({m.instance_id}) is {m.state}: ssh to {m.dns} once sshd is up (about a minute after boot)"
    )


@task(help={"spec": "path of the cluster spec (default: cluster.yaml)"})
@user_errors
def cost(c, spec=None):
    """The month's budget (actual and forecast spend) and which SSH machines run now, at what hourly cost."""
    from clusterspec.loader import load_spec
    from provision.operations.cost import report

    print("\n".join(report(load_spec(spec))))


@task(
    help={
        "dry_run": "read the versions and show the plan; change nothing",
        "yes": "do not ask for confirmation (automation)",
        "spec": "path of the cluster spec (default: cluster.yaml)",
    }
)
@user_errors
def upgrade(c, dry_run=False, yes=False, spec=None):
    """Upgrade the control plane to the spec's kubernetes.version, one member at a time (kubeadm upgrade apply on
    the first, kubeadm upgrade node on the others, then each kubelet); nodes follow through drift."""
    import sys

    from clusterspec.errors import UserError
    from clusterspec.loader import load_spec
    from provision.operations import upgrade as up
    from provision.operations.ssm import SsmRunner, control_plane_members

    cluster = load_spec(spec)
    members = control_plane_members(cluster)
    runner = SsmRunner(cluster.primary_region)
    server, kubelets = up.status(runner, members)
    problems = up.check(cluster.kubernetes.version, server, kubelets)
    if problems:
        raise UserError(problems)
    print("\n".join(f"  {line}" for line in up.plan_lines(cluster, members, server, kubelets)))
    if dry_run:
        print("dry run: nothing changed")
        return
    if server.lstrip("v") == cluster.kubernetes.version:
        print(f"the control plane already runs {server}")
        return
    if not yes:
        if not sys.stdin.isatty():
            raise UserError("upgrade: no terminal to confirm on; pass --yes to proceed unattended")
        if input(f"type the cluster name ({cluster.name}) to upgrade: ").strip() != cluster.name:
            raise UserError("not confirmed; nothing was changed")
    up.upgrade(cluster, runner, members)


no_h_shortflag(globals())  # -h means help on every task (provision/cli_support.py)
