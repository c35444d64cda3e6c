"""What the invoke tasks render, plan, up, down and bootstrap-state do (tasks.py only parses arguments)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from clusterspec.errors import UserError
from clusterspec.spec import Cluster
from provision.terraform import endpoint, mirror, rehearsal
from provision.terraform.render import render, roots
from provision.terraform.runner import Changes, Runner, require_aws_credentials, require_terraform
from provision.terraform.settings import DEFAULT_OUT, GLOBAL

Confirm = Callable[[str], str]


def selected_roots(cluster: Cluster, region: str | None, all_roots: bool) -> list[str]:
    """The roots to act on, in apply order (global, then spill-over order)."""
    if all_roots and region:
        raise UserError("give either --region R or --all, not both")
    if all_roots:
        return roots(cluster)
    if not region:
        raise UserError(f"--region is required (one of {', '.join(roots(cluster))}), or --all for every root")
    if region not in roots(cluster):
        raise UserError(f"--region {region}: not in the spec; roots are {', '.join(roots(cluster))}")
    return [region]


def render_roots(cluster: Cluster, regions: list[str] | None, out: Path, state_bucket: str | None) -> None:
    started = time.perf_counter()
    done = render(
        cluster,
        regions=[r for r in regions or [] if r != GLOBAL] or None,
        out_dir=out,
        state_bucket=state_bucket,
    )
    for r in done:
        print(f"rendered {r.path} ({', '.join(r.files)})")
    print(f"{len(done)} roots in {time.perf_counter() - started:.2f}s")


# Root variables of the primary region (the Client VPN's ACM certificates): never in the repository.
PRIMARY_VARIABLES = ("client_vpn_server_certificate_arn", "client_vpn_client_ca_arn")
# `up --yes` applies a plan that destroys at most this many resources; more needs a person to confirm.
MAX_UNATTENDED_DELETES = 5
# `up` lists at most this many disruptive changes before asking.
SHOWN_DISRUPTIONS = 40


def require_primary_variables(cluster: Cluster, names: list[str], out: Path) -> None:
    if cluster.primary_region not in names:
        return
    root = out / cluster.primary_region
    if list(root.glob("*.auto.tfvars")) + list(root.glob("terraform.tfvars")):
        return
    missing = [v for v in PRIMARY_VARIABLES if not os.environ.get(f"TF_VAR_{v}")]
    if missing:
        raise UserError(
            f"{cluster.primary_region} needs the Client VPN certificates imported into ACM: set "
            + " and ".join(f"TF_VAR_{v}" for v in missing)
            + " to their ARNs (docs/terraform.md)"
        )


def _prepare(
    cluster: Cluster,
    names: list[str],
    out: Path,
    state_bucket: str | None,
    plugin_dir: Path | None,
    url: str | None = None,
) -> dict[str, Runner]:
    """Render, then init each root: from the provider mirror when this machine has one (mirror.py), against the
    embedded AWS at URL when given (endpoint.py; the override files are removed without it)."""
    require_terraform()
    require_aws_credentials()
    require_primary_variables(cluster, names, out)
    render(cluster, regions=[n for n in names if n != GLOBAL] or None, out_dir=out, state_bucket=state_bucket)
    plugin_dir = mirror.plugin_dir(plugin_dir)
    if plugin_dir is not None:
        found = mirror.versions(plugin_dir) if plugin_dir.is_dir() else []
        print(f"provider mirror {plugin_dir} (hashicorp/aws {', '.join(found) or 'none'})")
    keys = endpoint.services(_endpoint_keys(plugin_dir)) if url else None
    runners = {}
    for name in names:
        backend = endpoint.write(out / name, url, keys)
        runner = Runner(out / name, plugin_dir=plugin_dir, backend_config=backend)
        print(f"[{name}] terraform init" + (f" (embedded AWS {url})" if url else ""))
        runner.init()
        runners[name] = runner
    return runners


def _endpoint_keys(plugin_dir: Path | None) -> list[str]:
    if plugin_dir is None or not mirror.versions(plugin_dir):
        raise UserError(
            "--endpoint needs the AWS provider from a local mirror (its schema names the service endpoints): "
            "pass --plugin-dir DIR (a `terraform providers mirror` directory) or set LAB_TF_PLUGIN_DIR"
        )
    return mirror.schema(plugin_dir)["endpoints"]


def plan(
    cluster: Cluster,
    names: list[str],
    out: Path = DEFAULT_OUT,
    state_bucket: str | None = None,
    plugin_dir: Path | None = None,
    url: str | None = None,
) -> dict[str, Changes]:
    """Plan each root (a dry run of `up`); later roots may show unknown values until earlier ones exist."""
    runners = _prepare(cluster, names, out, state_bucket, plugin_dir, url)
    result = {}
    for name, runner in runners.items():
        result[name] = runner.plan()
        print(f"[{name}] {result[name].summary()}")
        if url:
            _, left = rehearsal.split(
                result[name].create + result[name].update + result[name].delete, rehearsal.load()
            )
            for address, entry in left.items():
                print(f"[{name}] left out of the rehearsal: {address} ({entry.gap})")
        _show_disruptions(name, result[name])
    return result


def _rehearsal_plan(name: str, runner: Runner) -> Changes:
    """--endpoint: the plan of everything but the left-out resources (rehearsal.py), each of them named."""
    whole = runner.plan()
    keep, left = rehearsal.split(whole.resources, rehearsal.load())
    if not left:
        return whole
    for address, entry in left.items():
        print(f"[{name}] left out of the rehearsal: {address} ({entry.gap})")
    return runner.plan(targets=keep)


def _show_disruptions(name: str, changes: Changes) -> None:
    if not changes.disruptive:
        return
    print(f"[{name}] {len(changes.disruptive)} disruptive changes:")
    for d in changes.disruptive[:SHOWN_DISRUPTIONS]:
        print(f"  {d}")
    if len(changes.disruptive) > SHOWN_DISRUPTIONS:
        rest = len(changes.disruptive) - SHOWN_DISRUPTIONS
        print(
            f"  ... and {rest} more: `terraform show {name}/tfplan` in the output directory shows the whole plan"
        )


def _confirm(prompt: str, expected: str, yes: bool, ask: Confirm) -> None:
    if yes:
        return
    if not sys.stdin.isatty() and ask is input:
        raise UserError(f"{prompt.rstrip(': ')}: no terminal to confirm on; pass --yes to proceed unattended")
    if ask(prompt).strip() != expected:
        raise UserError("not confirmed; nothing was changed")


def up(
    cluster: Cluster,
    names: list[str],
    out: Path = DEFAULT_OUT,
    state_bucket: str | None = None,
    plugin_dir: Path | None = None,
    yes: bool = False,
    ask: Confirm = input,
    url: str | None = None,
) -> None:
    """Render, init, plan and apply each root in order. A plan with disruptive changes (deletions, replacements,
    in-place updates of instances, groups, launch templates, the control plane or VPN connections, a lowered
    max_size; plan_summary.py) shows them and asks first."""
    for name in names:
        runner = _prepare(cluster, [name], out, state_bucket, plugin_dir, url)[name]
        if name == cluster.primary_region:
            # the control plane applies flannel's objects at boot: their images by digest, or nothing is applied
            from provision import flannel, images

            # (in the lab's mirror, not yet copied there: this apply makes the repositories; the kubelet retries)
            images.check_pinned(
                out / name / "control_plane.tf", flannel.manifest(cluster), cluster=cluster, in_registry=False
            )
        changes = _rehearsal_plan(name, runner) if url else runner.plan()
        print(f"[{name}] {changes.summary()}")
        if changes.empty:
            runner.write_outputs()
            continue
        if changes.disruptive:
            _show_disruptions(name, changes)
            if yes and len(changes.delete) > MAX_UNATTENDED_DELETES:
                raise UserError(
                    f"[{name}] the plan destroys {len(changes.delete)} resources, more than --yes may "
                    f"({MAX_UNATTENDED_DELETES}): review it with `invoke plan --region {name}` and run up "
                    "without --yes to confirm"
                )
            _confirm(f"type {name} to apply it: ", name, yes, ask)
        runner.apply()
        print(f"[{name}] applied; outputs in {runner.write_outputs()}")


def down(
    cluster: Cluster,
    names: list[str],
    out: Path = DEFAULT_OUT,
    state_bucket: str | None = None,
    plugin_dir: Path | None = None,
    yes: bool = False,
    dry_run: bool = False,
    ask: Confirm = input,
    teardown=None,
    url: str | None = None,
) -> None:
    """Destroy roots in reverse apply order: plan every destruction first, show the count, ask once (typing
    the cluster's name), then apply the saved destroy plans. ``teardown`` (provision/operations/teardown.py,
    issue 29) shows what goes besides resources before the question, and runs its steps (cordon, the jobs,
    protection off, data) between the question and the destroy and its clean-up after."""
    ordered = list(reversed(names))
    runners = _prepare(cluster, ordered, out, state_bucket, plugin_dir, url)
    plans = {}
    for name, runner in runners.items():
        plans[name] = runner.plan(destroy=True)
        print(f"[{name}] {plans[name].summary()}")
    total = sum(len(c.delete) for c in plans.values())
    if teardown is not None:
        for line in teardown.show():
            print(f"  {line}")
    if dry_run or total == 0:
        print(f"{'dry run: ' if dry_run else ''}{total} resources would be destroyed; nothing was changed")
        return
    _confirm(
        f"destroy {total} resources in {', '.join(ordered)}? type the cluster name ({cluster.name}) to proceed: ",
        cluster.name,
        yes,
        ask,
    )
    if teardown is not None:
        teardown.before()
    for name, runner in runners.items():
        runner.apply(destroy=True)
        print(f"[{name}] destroyed")
    if teardown is not None:
        teardown.after()
