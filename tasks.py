"""invoke tasks: each parses its arguments and calls the `provision` or `autoscaler` package.

`invoke --list` shows them all; `invoke --help TASK` shows a task's options.
"""

from invoke import task

from provision.cli_support import user_errors


# --- the spec ---------------------------------------------------------------------------------------------
@task(help={"spec": "path of the cluster spec (default: cluster.yaml)"})
@user_errors
def validate(c, spec=None):
    """Check the cluster spec; one line per problem and exit status 2 when it is invalid."""
    from provision.loader import load_spec
    from provision.report import summary

    print(f"ok: {summary(load_spec(spec))}")


@task(name="plan-addresses", help={"spec": "path of the cluster spec (default: cluster.yaml)"})
@user_errors
def plan_addresses(c, spec=None):
    """Print the address plan: every VPC, subnet per zone, site, VPN pool, pod and service network."""
    from provision.loader import load_spec
    from provision.report import print_address_plan

    print_address_plan(load_spec(spec))


@task(help={"spec": "path of the cluster spec (default: cluster.yaml)", "out": "logs and plot (build/demo)"})
@user_errors
def demo(c, spec=None, out=None):
    """The real autoscaler on an embedded AWS (moto) and a local Kubernetes API, a bursty workload (docs/demo.md)."""
    from autoscaler.demo.run import main

    main(spec, out)


# --- simulator (issue 7; docs/simulator.md) ----------------------------------------------------------------
@task(
    help={
        "trace": "job trace CSV (default: ../shared/data/philly-week-2017-12-08.csv next to the repository)",
        "scenario": "a generated scenario instead of a trace: burst",
        "policies": "comma-separated: batch,step,ca-like,static (default: all)",
        "spec": "path of the cluster spec (default: cluster.yaml)",
        "json": "write the figures as JSON to this file",
        "report": "write an HTML report (plots and table) into this directory",
        "workers": "processes running policies side by side (default: one per core, at most 2)",
    }
)
@user_errors
def simulate(c, trace=None, scenario=None, policies="batch,step,ca-like,static", spec=None, json=None,
             report=None, workers=None):  # fmt: skip
    """Replay a job trace (or the burst scenario) through the cluster model under each scaling policy."""
    from autoscaler.sim.simulate import main

    main(trace, scenario, policies, spec, json, report, int(workers) if workers else None)


# --- Terraform (issue 5; docs/terraform.md) ----------------------------------------------------------------
_TF_HELP = {
    "region": "one root: a region of the spec, or global",
    "all": "every root: global, then the regions in spill-over order (down: the reverse)",
    "spec": "path of the cluster spec (default: cluster.yaml)",
    "out": "output directory (default: build/terraform)",
    "state_bucket": "S3 state bucket (default: <cluster>-terraform-state)",
    "plugin_dir": "air-gapped: a `terraform providers mirror` directory instead of the registry",
    "yes": "do not ask for confirmation (automation)",
}


def _tf_args(spec, region, all, out):
    from pathlib import Path

    from provision.loader import load_spec
    from provision.terraform.commands import selected_roots
    from provision.terraform.settings import DEFAULT_OUT

    cluster = load_spec(spec)
    return cluster, selected_roots(cluster, region, all), Path(out) if out else DEFAULT_OUT


@task(help={k: _TF_HELP[k] for k in ("region", "spec", "out", "state_bucket")})
@user_errors
def render(c, region=None, spec=None, out=None, state_bucket=None):
    """Render the Terraform roots from the spec: build/terraform/<region>/ and build/terraform/global/."""
    from pathlib import Path

    from provision.loader import load_spec
    from provision.terraform.commands import render_roots
    from provision.terraform.settings import DEFAULT_OUT

    cluster = load_spec(spec)
    render_roots(cluster, [region] if region else None, Path(out) if out else DEFAULT_OUT, state_bucket)


@task(help={k: _TF_HELP[k] for k in ("region", "all", "spec", "out", "state_bucket", "plugin_dir")})
@user_errors
def plan(c, region=None, all=False, spec=None, out=None, state_bucket=None, plugin_dir=None):
    """Render, init and plan Terraform roots (a dry run of `up`); nothing is changed."""
    from provision.terraform import commands

    cluster, names, out = _tf_args(spec, region, all, out)
    commands.plan(cluster, names, out, state_bucket, plugin_dir)


@task(help=_TF_HELP)
@user_errors
def up(c, region=None, all=False, spec=None, out=None, state_bucket=None, plugin_dir=None, yes=False):
    """Render, plan and apply Terraform roots; asks first when a plan destroys or replaces anything."""
    from provision.terraform import commands

    cluster, names, out = _tf_args(spec, region, all, out)
    commands.up(cluster, names, out, state_bucket, plugin_dir, yes=yes)


@task(help=_TF_HELP | {"dry_run": "only plan the destruction and print what would go"})
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
):
    """Destroy Terraform roots after showing the destroy plan and asking for the cluster's name."""
    from provision.terraform import commands

    cluster, names, out = _tf_args(spec, region, all, out)
    commands.down(cluster, names, out, state_bucket, plugin_dir, yes=yes, dry_run=dry_run)


@task(name="bootstrap-state", help={k: _TF_HELP[k] for k in ("spec", "state_bucket")})
@user_errors
def bootstrap_state(c, spec=None, state_bucket=None):
    """Create the Terraform state bucket and lock table in the primary region (idempotent)."""
    from provision.loader import load_spec
    from provision.terraform.bootstrap import bootstrap_state as create
    from provision.terraform.settings import Backend

    cluster = load_spec(spec)
    backend = Backend.for_cluster(cluster.name, cluster.primary_region, state_bucket)
    for name, state in create(backend).items():
        print(f"{name}: {state}")


# --- machine images (issue 6) ------------------------------------------------------------------------------
@task(
    name="bake-ami",
    help={
        "region": "AWS region to bake in (default: the primary region)",
        "local": "bake against a moto server on 127.0.0.1: no AWS, no scripts run (docs/images.md)",
        "spec": "path of the cluster spec (default: cluster.yaml)",
    },
)
@user_errors
def bake_ami(c, region=None, local=False, spec=None):
    """Bake the GPU worker AMI with Packer and record its id in build/ami/<region>.json and SSM."""
    from provision.loader import load_spec
    from provision.packer.bake import bake
    from provision.packer.progress import packer_progress
    from provision.packer.variables import check_region

    cluster = load_spec(spec)
    region = check_region(cluster, region or cluster.primary_region)
    with packer_progress(f"bake-ami {region}{' (local)' if local else ''}") as on_event:
        done = bake(cluster, region, local=local, on_event=on_event)
    print(f"baked {done['ami_id']} ({done['name']}): {done['file']}, SSM {done['ssm_parameter']}")


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

    from provision.chef.attributes import write_node_attributes
    from provision.chef.outputs import OUTPUTS_DIR
    from provision.loader import load_spec

    out = write_node_attributes(
        load_spec(spec), site, Path(outputs) if outputs else OUTPUTS_DIR, placeholders=placeholders
    )
    print(f"wrote {out}" + (" (placeholder VPN endpoints: not for a real converge)" if placeholders else ""))


# --- autoscaler planner (issue 3; docs/planner.md) ------------------------------------------------------------
@task(
    help={
        "json": "print the figures as JSON lines",
        "no_process": "skip the whole-process `autoscaler plan` run",
    }
)
def bench(c, json=False, no_process=False):
    """Benchmark the planner on generated snapshots and print the figures (docs/benchmarks.md, "Planner")."""
    import argparse

    from autoscaler.commands.bench import run

    run(argparse.Namespace(json=json, no_process=no_process))


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
