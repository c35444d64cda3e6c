"""``lab``: build the standard image from the code here, submit it as a job, follow it (docs/researchers.md).

    lab image build [PATH] [--push]
    lab submit --gpus N [--nodes M] [--gang] [--region-pref R,...] [--name NAME] [PATH options] -- COMMAND...
    lab status | lab logs JOB [-f] [--index I] | lab cancel JOB
    lab tensorboard JOB
    lab ssh-config [--user NAME]

Bad input is one line on stderr and exit status 2; nothing is created.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from pathlib import Path

from labctl import engine, jobs
from labctl.context import build_context
from labctl.errors import LabError
from labctl.settings import Settings


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="lab",
        description="Build the standard image of your code, run it on the cluster's GPUs, follow it.",
    )
    p.add_argument("--spec", help="the cluster spec (default: LAB_SPEC, else the repository's cluster.yaml)")
    p.add_argument("--kubeconfig", help="default: KUBECONFIG, else ~/.kube/config")
    p.add_argument("--context", help="kubeconfig context (default: the current one)")
    p.add_argument("-n", "--namespace", help="default: the context's namespace (yours: u-<you>)")
    sub = p.add_subparsers(dest="cmd", required=True)

    image = sub.add_parser("image", help="the standard image of your code").add_subparsers(
        dest="image_cmd", required=True
    )
    b = image.add_parser("build", help="snapshot PATH into a deterministic context and build it")
    b.add_argument("path", nargs="?", default=".")
    b.add_argument("--push", action="store_true", help="push to the cluster's registry (ECR)")

    s = sub.add_parser("submit", help="run a command on GPUs: lab submit --gpus 8 -- python train.py")
    s.add_argument("--gpus", type=int, required=True, help="GPUs per node")
    s.add_argument("--nodes", type=int, default=1, help="nodes, one pod each (default 1)")
    s.add_argument("--gang", action="store_true", help="all nodes start together or none does")
    s.add_argument(
        "--region-pref",
        default="",
        help="comma-separated regions or sites the job may use, most preferred first",
    )
    s.add_argument("--name", help="job name (default: the folder's name and the image hash)")
    s.add_argument("--path", default=".", help="the code to run (default: .)")
    s.add_argument("--no-build", action="store_true", help="the image of this code is already pushed")
    s.add_argument("--dry-run", action="store_true", help="print the objects as YAML, create nothing")
    s.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")

    sub.add_parser("status", help="your jobs and their pods")
    lg = sub.add_parser("logs", help="a job's output (index 0 unless --index)")
    lg.add_argument("job")
    lg.add_argument("-f", "--follow", action="store_true")
    lg.add_argument("--index", type=int, default=0)
    c = sub.add_parser("cancel", help="delete a job with its pods")
    c.add_argument("job")
    t = sub.add_parser("tensorboard", help="TensorBoard on a job's LOG_DIR; prints its URL (on the VPN)")
    t.add_argument("job")
    t.add_argument("--timeout", type=float, default=300)
    sc = sub.add_parser("ssh-config", help="write ~/.ssh entries for the SSH machines")
    sc.add_argument("--user", default=None, help="your cluster user name (default: your login)")
    sc.add_argument("--identity", default=None, help="IdentityFile for the entries")
    sc.add_argument("--ssh-dir", default=str(Path.home() / ".ssh"))
    return p


def _user() -> str:
    return os.environ.get("LAB_USER") or getpass.getuser()


def _image(
    settings: Settings, path: str, push: bool, build: bool, region: str | None = None
) -> tuple[str, str]:
    """(image reference, content tag): built and pushed when an engine works, else reused or explained."""
    ctx = build_context(path, settings.base_image, settings.python)
    ref = settings.image_ref(ctx.tag, region)
    print(f"context: {len(ctx.files)} files, sha256 {ctx.digest[:16]}, image {ref}")
    if not build:
        return ref, ctx.tag
    eng = engine.find_engine()
    if eng is None:
        out = engine.write_context(ctx)
        hint = f"no working docker or buildah here; the context is {out}. Build it with: {engine.how_to_build(out, ref)}"
        if push:
            raise LabError(hint + ", push it, then rerun with --no-build")
        print(hint)
        return ref, ctx.tag
    if engine.image_exists(eng, ref):
        print(f"reusing {ref} (same content hash)")
    else:
        engine.build(eng, ctx, ref)
    if push:
        if settings.registry(region) is None:
            raise LabError(
                "no registry: set researchers.registry in the spec or LAB_REGISTRY (your ECR host)"
            )
        engine.push(eng, ref)
        print(f"pushed {ref}")
    return ref, ctx.tag


def _submit(args, settings: Settings) -> None:
    from labctl.kube import Kube

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    prefs = [r.strip() for r in args.region_pref.split(",") if r.strip()]
    user = _user()
    # refuse what could never run before building or creating anything
    probe = jobs.JobRequest(args.name or "probe", "x", "x", command, args.gpus, args.nodes, args.gang, prefs)
    jobs.check_request(probe, settings)
    region = prefs[0] if prefs and prefs[0] in {r.name for r in settings.spec.regions} else None
    ref, tag = _image(settings, args.path, push=not args.no_build, build=not args.no_build, region=region)
    name = args.name or jobs.default_name(Path(args.path).resolve().name, tag)
    kube = None if args.dry_run else Kube(args.kubeconfig, args.context)
    namespace = args.namespace or (kube.default_namespace if kube else settings.namespace(user))
    prefix = settings.spec.researchers.namespace_prefix
    if namespace.startswith(prefix) and namespace[len(prefix) :] in {u.name for u in settings.spec.users}:
        user = namespace[len(prefix) :]  # the namespace names the researcher, whatever the laptop's login
    req = jobs.JobRequest(name, namespace, ref, command, args.gpus, args.nodes, args.gang, prefs, user, tag)
    jobs.check_request(req, settings)
    if args.dry_run:
        import yaml

        docs = [jobs.job_manifest(req, settings)]
        if req.nodes > 1:
            docs.append(jobs.service_manifest(req))
            docs.append(jobs.network_policy_manifest(req))
        if req.gang:
            docs.append(jobs.podgroup_manifest(req))
        print(yaml.safe_dump_all(docs, sort_keys=False), end="")
        return
    try:
        kube.submit(req, settings)
    finally:
        kube.close()
    shape = f"{req.nodes} node{'s' if req.nodes > 1 else ''} x {req.gpus} GPUs" + (
        ", gang" if req.gang else ""
    )
    print(f"submitted job {name} in {namespace}: {shape}")
    print(f"follow it:  lab status   lab logs {name} -f   lab tensorboard {name}   lab cancel {name}")


def _status(kube, namespace: str) -> None:
    rows = [("JOB", "NODES", "GPUS/NODE", "ACTIVE", "DONE", "FAILED", "PODS")]
    for job in sorted(kube.jobs(namespace), key=lambda j: j.metadata.name):
        st = job.status
        limits = job.spec.template.spec.containers[0].resources.limits or {}
        gpus = limits.get(jobs.GPU, "0")
        pods = kube.pods(namespace, job.metadata.name)
        phases = ",".join(f"{p.status.phase}@{p.spec.node_name or '-'}" for p in pods) or "-"
        row = (
            job.metadata.name,
            job.spec.completions,
            gpus,
            st.active or 0,
            st.succeeded or 0,
            st.failed or 0,
        )
        rows.append((*map(str, row), phases))
    if len(rows) == 1:
        print(f"no jobs in {namespace}; submit one with: lab submit --gpus 1 -- python train.py")
        return
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1])


def run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    settings = Settings.load(args.spec)
    if args.cmd == "image":
        _image(settings, args.path, push=args.push, build=True)
        return 0
    if args.cmd == "submit":
        _submit(args, settings)
        return 0
    if args.cmd == "ssh-config":
        from labctl import sshconfig

        if not settings.spec.researchers.ssh_machines:
            raise LabError("the cluster spec lists no researchers.ssh_machines")
        path = sshconfig.write(settings.spec, args.user or _user(), Path(args.ssh_dir), args.identity)
        print(f"wrote {path}; try: ssh {sshconfig.host_names(settings.spec)[0][0]} (on the VPN)")
        if hint := sshconfig.idle_hint(settings.spec):
            print(hint)
        return 0
    from labctl.kube import Kube

    kube = Kube(args.kubeconfig, args.context)
    namespace = args.namespace or kube.default_namespace
    try:
        if args.cmd == "status":
            _status(kube, namespace)
        elif args.cmd == "logs":
            for chunk in kube.logs(namespace, args.job, args.index, args.follow):
                sys.stdout.write(chunk)
                sys.stdout.flush()
        elif args.cmd == "cancel":
            kube.get_job(namespace, args.job)
            gone = kube.cancel(namespace, args.job)
            print(f"cancelled {args.job}: deleted {', '.join(gone)} and its pods")
        elif args.cmd == "tensorboard":
            url = kube.tensorboard(
                namespace, args.job, settings.spec.researchers.tensorboard_image, args.timeout
            )
            print(f"TensorBoard for {args.job}: {url}  (opens on the VPN; stops with lab cancel {args.job})")
    finally:
        kube.close()
    return 0


def main(argv: list[str] | None = None) -> None:
    try:
        code = run(sys.argv[1:] if argv is None else argv)
    except LabError as e:
        print(f"lab: {e.lines[0]}", file=sys.stderr)
        code = 2
    except KeyboardInterrupt:
        code = 130
    sys.exit(code)


if __name__ == "__main__":
    main()
