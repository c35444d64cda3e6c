"""``lab``: run the code here on the cluster's GPUs, follow it (docs/researchers.md).

    lab submit --gpus N [--gpu-type A100] [--spot] [--nodes M] [--no-gang] [--region-pref R,...] [--name NAME]
               [--env K=V ...] [--retries N] [--max-file-mb MB] [--path PATH] [--dry-run] -- COMMAND...
    lab image build [PATH] [--push]
    lab status | lab logs JOB [-f] [--index I | --all] | lab cancel JOB
    lab tensorboard JOB
    lab ssh-config

The cluster's settings come from the cluster itself (ConfigMap kube-public/research-lab-settings), read with your
kubeconfig; bad input is one line on stderr and exit status 2, and nothing is created.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from pathlib import Path

from labctl import deps, engine, jobs, snapshot
from labctl.context import DEFAULT_MAX_FILE_MB, build_snapshot
from labctl.errors import LabError
from labctl.settings import Settings


def _version() -> str:
    from importlib import metadata

    for dist in ("research-lab", "gpu-research-cluster"):  # lab alone, or the repository's checkout
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return "unknown"


def _gpus(value: str) -> tuple[str | None, int]:
    """``8`` or SkyPilot's ``A100:8``."""
    kind, _, count = value.rpartition(":")
    try:
        return (kind or None), int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r}: give a number of GPUs per node, or TYPE:N (A100:8)"
        ) from None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lab", description="Run the code here on the cluster's GPUs, follow it.")
    p.add_argument("--version", action="version", version=f"lab {_version()}")
    p.add_argument(
        "--settings", help="the cluster's settings from a file (default: LAB_SETTINGS, else the cluster's)"
    )
    p.add_argument("--kubeconfig", help="default: KUBECONFIG, else ~/.kube/config")
    p.add_argument("--context", help="kubeconfig context (default: the current one)")
    p.add_argument("-n", "--namespace", help="default: the context's namespace (yours: u-<you>)")
    sub = p.add_subparsers(dest="cmd", required=True)

    image = sub.add_parser("image", help="the image of your requirements").add_subparsers(
        dest="image_cmd", required=True
    )
    b = image.add_parser(
        "build", help="build the image of PATH's requirements (only when the standard one lacks them)"
    )
    b.add_argument("path", nargs="?", default=".")
    b.add_argument("--push", action="store_true", help="push to the cluster's registry (ECR)")

    s = sub.add_parser("submit", help="run a command on GPUs: lab submit --gpus 8 -- python train.py")
    s.add_argument(
        "--gpus", type=_gpus, help="GPUs per node (8), or TYPE:N (A100:8); required here or in -f FILE"
    )
    s.add_argument("--gpu-type", help="A100, V100, T4, Titan X, ... (the cluster's GPU models)")
    s.add_argument(
        "--spot", action="store_true", help="run on spot capacity (cheaper, may be reclaimed: retried)"
    )
    s.add_argument("--nodes", type=int, default=1, help="nodes, one pod each (default 1)")
    g = s.add_mutually_exclusive_group()
    g.add_argument(
        "--gang",
        dest="gang",
        action="store_true",
        default=None,
        help="all nodes start together (default for --nodes > 1)",
    )
    g.add_argument("--no-gang", dest="gang", action="store_false", help="start nodes one by one")
    s.add_argument(
        "--region-pref",
        default="",
        help="comma-separated regions or sites the job may use, most preferred first",
    )
    s.add_argument(
        "--name", help="job name (default: the folder's name, the code's hash and a random suffix)"
    )
    s.add_argument("--path", default=".", help="the code to run (default: .)")
    s.add_argument(
        "--env", action="append", default=[], metavar="K=V", help="an environment variable (repeatable)"
    )
    s.add_argument(
        "--retries",
        type=int,
        default=jobs.DEFAULT_RETRIES,
        help=f"times a node lost to a disruption is replaced (default {jobs.DEFAULT_RETRIES}); errors never are",
    )
    s.add_argument(
        "--max-file-mb",
        type=float,
        default=DEFAULT_MAX_FILE_MB,
        help=f"files over this size stay out of the snapshot (default {DEFAULT_MAX_FILE_MB}; 0: no limit)",
    )
    s.add_argument(
        "--keep",
        action="append",
        default=[],
        metavar="PATH",
        help="a path next to the code (out, runs) copied to $LOG_DIR when the command ends (repeatable)",
    )
    s.add_argument("--no-build", action="store_true", help="the image of your requirements is already pushed")
    s.add_argument(
        "--dry-run",
        action="store_true",
        help="the objects as the API server would create them (server-side dry run), nothing uploaded or created",
    )
    s.add_argument(
        "-f",
        "--file",
        help="a job file (YAML) with the same fields as these flags (gpus, nodes, env, command, ...); "
        "flags given here win",
    )
    s.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")

    st = sub.add_parser(
        "status", help="your jobs: state and why (quota, nodes, exit code), age, GPUs, region"
    )
    st.add_argument("-o", "--output", choices=["table", "json"], default="table")
    lg = sub.add_parser("logs", help="a job's output: rank 0's unless --index or --all")
    lg.add_argument("job")
    lg.add_argument("-f", "--follow", action="store_true")
    which = lg.add_mutually_exclusive_group()
    which.add_argument("--index", type=int, default=None, help="node N's pod")
    which.add_argument("--all", action="store_true", help="every pod, each line prefixed with its node")
    c = sub.add_parser("cancel", help="delete a job with its pods")
    c.add_argument("job")
    t = sub.add_parser("tensorboard", help="TensorBoard on a job's LOG_DIR; prints its URL (on the VPN)")
    t.add_argument("job")
    t.add_argument("--timeout", type=float, default=300)
    comp = sub.add_parser("completion", help="shell completion: source <(lab completion bash)")
    comp.add_argument("shell", choices=["bash", "zsh"])
    sc = sub.add_parser("ssh-config", help="write ~/.ssh entries for the SSH machines")
    sc.add_argument(
        "--user", default=None, help="your cluster user name (default: your kubeconfig's identity)"
    )
    sc.add_argument("--identity", default=None, help="IdentityFile for the entries")
    sc.add_argument("--ssh-dir", default=str(Path.home() / ".ssh"))
    return p  # fmt: skip


def _submit_actions(parser: argparse.ArgumentParser) -> list:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["submit"]._actions


def _identity(kube, args) -> str:
    """Who the kubeconfig is: the API server's answer, else the client certificate's CN, else LAB_USER or the login."""
    from labctl import sshconfig

    return (
        (kube.whoami() if kube is not None else None)
        or sshconfig.certificate_user(args.kubeconfig, args.context)
        or os.environ.get("LAB_USER")
        or getpass.getuser()
    )


def _where(kube, args, settings: Settings, user: str) -> tuple[str, str]:
    """(namespace, researcher): the namespace names the researcher (u-alice is alice's), whatever the login."""
    namespace = args.namespace or (kube.default_namespace if kube else settings.namespace(user))
    prefix = settings.namespace_prefix
    if namespace.startswith(prefix) and settings.uid(namespace[len(prefix) :]) is not None:
        user = namespace[len(prefix) :]
    return namespace, user


def _image(settings: Settings, snap, push: bool, build: bool, region: str | None, say=print,
           at_start: bool = False) -> tuple[str, deps.Install]:  # fmt: skip
    """(the job's image, what the job installs when it starts): the standard image when it has the requirements;
    else the requirements' own image (built once, with docker or buildah); else, with ``at_start`` and no engine,
    the standard image with the missing requirements installed when the job starts. The project itself, when it is
    a package (setup.py, pyproject.toml), is installed at start in every case (``pip install -e .``)."""
    packages = settings.data.standard_packages
    d = deps.resolve(snap, packages)
    standard = settings.standard_ref(region)
    image_deps = deps.for_image(d)
    eng = None
    if not image_deps.standard:
        eng = engine.find_engine() if build or at_start else None  # `docker info`: no side effect
    install = deps.plan(snap, d, packages, at_start=at_start and eng is None and not image_deps.standard)
    if "-e" in {s[0] for s in install.steps if s}:
        say("the project is a package: the job runs `pip install -e .` in its own venv before the command")
    if image_deps.standard:
        if d.source and not d.missing:
            say(f"{d.source}: the standard image has all {len(d.lines)} requirements; no image to build")
        elif d.source:
            say(f"{d.source}: the standard image has all but the project's own ({', '.join(d.missing)}); "
                "installed when the job starts")  # fmt: skip
        return standard, install
    ref = settings.image_ref(image_deps.tag(settings.standard_image), region)
    missing = f"{', '.join(d.missing[:3])}{' ...' if len(d.missing) > 3 else ''}"
    if at_start and eng is None:
        say(f"{d.source}: {len(d.missing)} not in the standard image ({missing}); no container engine here: the job "
            "installs them when it starts (pip's cache on your home volume; an image is faster: lab image build --push)")  # fmt: skip
        return standard, install
    say(f"{d.source}: {len(d.missing)} not in the standard image ({missing}): image {ref}")
    if not build:
        return ref, install
    data = deps.build_context(standard, image_deps)
    tag = image_deps.tag(settings.standard_image)
    if eng is None:
        out = engine.write_context(tag, data)
        raise LabError(
            f"no working docker or buildah here to build {ref}; build it anywhere with: "
            f"{engine.how_to_build(out, ref)}, push it, then rerun with --no-build"
        )
    if engine.image_exists(eng, ref):
        say(f"reusing {ref} (same requirements)")
    else:
        engine.build(eng, tag, data, ref)
    if push:
        if settings.registry(region) is None:
            raise LabError("no registry: the cluster's settings name none; set LAB_REGISTRY (your ECR host)")
        engine.push(eng, ref)
        say(f"pushed {ref}")
    return ref, install


_FILE_FIELDS = {  # a job file's fields: the submit flags' names (dashes or underscores), how each is read
    "gpus": "gpus", "gpu_type": "str", "spot": "bool", "nodes": "int", "gang": "bool", "region_pref": "list",
    "name": "str", "path": "str", "env": "env", "retries": "int", "max_file_mb": "float", "keep": "list",
    "no_build": "bool", "command": "command",
}  # fmt: skip


def _job_file(args, parser_defaults: dict, given: set[str]) -> None:
    """Fill ``args`` from ``lab submit -f FILE``: each field as its flag would set it; a flag on the command line
    wins. One line for a field that is unknown or of the wrong type."""
    import shlex

    import yaml

    try:
        data = yaml.safe_load(Path(args.file).read_text())
    except OSError as e:
        raise LabError(f"{args.file}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise LabError(f"{args.file}: not YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise LabError(f"{args.file}: a job file is a mapping of the submit flags' fields, e.g. gpus: 8")
    for raw, value in data.items():
        key = str(raw).replace("-", "_")
        kind = _FILE_FIELDS.get(key)
        if kind is None:
            raise LabError(f"{args.file}: {raw}: not a field of lab submit; the fields are "
                           f"{', '.join(k.replace('_', '-') for k in _FILE_FIELDS)}")  # fmt: skip
        if key in given:
            continue  # the flag wins
        bad = LabError(f"{args.file}: {raw}: {value!r} is not {_KIND_WORDS[kind]}")
        try:
            if kind == "gpus":
                value = _gpus(str(value))
            elif kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
                raise bad
            elif kind == "float":
                value = float(value)
            elif kind == "bool" and not isinstance(value, bool):
                raise bad
            elif kind == "str":
                value = str(value)
            elif kind == "list":
                value = [str(v) for v in value] if isinstance(value, list) else [str(value)]
                value = ",".join(value) if key == "region_pref" else value
            elif kind == "env":
                if isinstance(value, dict):
                    value = [f"{k}={v}" for k, v in value.items()]
                elif isinstance(value, list):
                    value = [str(v) for v in value]
                else:
                    raise bad
            elif kind == "command":
                value = shlex.split(value) if isinstance(value, str) else [str(v) for v in value]
        except (ValueError, TypeError, argparse.ArgumentTypeError):
            raise bad from None
        setattr(args, key, value)


_KIND_WORDS = {"gpus": "a number of GPUs per node or TYPE:N (A100:8)", "int": "a whole number",
               "float": "a number", "bool": "true or false", "str": "a string", "list": "a list",
               "env": "a mapping of names to values (LR: 3e-4)", "command": "a command (a string or a list)"}  # fmt: skip


def _submit(args, kube, settings: Settings) -> None:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    gpu_type, gpus = args.gpus
    gpu_type = args.gpu_type or gpu_type
    nodes = args.nodes
    gang = args.gang if args.gang is not None else nodes > 1
    prefs = [r.strip() for r in args.region_pref.split(",") if r.strip()]
    env = jobs.parse_env(args.env)
    user = _identity(kube, args)
    namespace, user = _where(kube, args, settings, user)
    probe = jobs.JobRequest(args.name or "probe", namespace, "x", command, gpus, nodes, gang, prefs, user,
                            gpu_type=gpu_type, spot=args.spot, env=env, retries=args.retries,
                            keep=tuple(args.keep))  # fmt: skip
    jobs.check_request(probe, settings)  # refuse what could never run before reading or uploading anything
    if settings.uid(user) is None:
        raise LabError(
            f"user {user!r} has no uid in the cluster's settings; ask your admin to run `invoke add-user {user}`"
        )
    region = prefs[0] if prefs and prefs[0] in settings.regions else None
    snap = build_snapshot(args.path, args.max_file_mb)
    print(f"code: {len(snap.files)} files, sha256 {snap.tag}" + (f", git {snap.git}" if snap.git else ""))
    for note in snap.notes:
        print(f"  {note}")
    image, install = _image(settings, snap, push=not args.no_build and not args.dry_run,
                            build=not args.no_build and not args.dry_run, region=region,
                            at_start=not args.no_build)  # fmt: skip
    bucket = settings.data.code_bucket
    if not bucket:
        raise LabError(f"the cluster's settings name no code bucket ({settings.source}: code_bucket); "
                       "ask your admin to run `invoke lab-settings` after `invoke up`")  # fmt: skip
    code_url = snapshot.url(bucket, user, snap.digest)
    if args.dry_run:  # the bucket is asked, never required: a first dry run needs no AWS identity
        try:
            there = snapshot.exists(bucket, user, snap, settings.data.code_region, settings.data.s3_endpoint)
            print(f"dry run: would {'reuse' if there else 'upload'} {code_url}")
        except LabError as e:
            print(f"dry run: would upload {code_url} unless it is there; not checked ({e.lines[0]})")
    else:
        stored = snapshot.upload(bucket, user, snap, settings.data.code_region, settings.data.s3_endpoint)
        print(f"uploaded {stored.size} bytes to {stored.url}" if stored.uploaded else f"reusing {stored.url}")
    name = args.name or jobs.default_name(Path(args.path).resolve().name, snap.tag, nodes)
    req = jobs.JobRequest(name, namespace, image, command, gpus, nodes, gang, prefs, user, code_tag=snap.tag,
                          code_url=code_url, code_sha256=snap.digest, gpu_type=gpu_type, spot=args.spot, env=env,
                          retries=args.retries, git=snap.git, s3_endpoint=settings.data.s3_endpoint,
                          install=install.steps, no_build_isolation=install.no_build_isolation, keep=tuple(args.keep),
                          python=settings.python)  # fmt: skip
    jobs.check_request(req, settings)
    from labctl import launchers

    for note in launchers.adapt(command, name, nodes, gpus).notes:
        print(f"  {note}")
    docs = jobs.manifests(req, settings)
    made = kube.submit(req, docs, dry_run=args.dry_run)
    if args.dry_run:
        import yaml

        print(f"dry run: the API server admitted these in {namespace} as {user}; nothing was created")
        if len(made) > 1:
            print(
                "(the Job is created suspended and resumed once its other objects exist: no pod starts before them)"
            )
        print(yaml.safe_dump_all(made, sort_keys=False), end="")
        return
    shape = f"{nodes} node{'s' if nodes > 1 else ''} x {gpus} GPUs" + (", gang" if gang else "")
    print(f"submitted job {name} in {namespace}: {shape}")
    print(f"follow it:  lab status   lab logs {name} -f   lab tensorboard {name}   lab cancel {name}")


def _status(kube, namespace: str, output: str = "table") -> None:
    rows = kube.status_rows(namespace)
    if output == "json":
        import json

        print(json.dumps({"namespace": namespace, "jobs": rows}, indent=2))
        return
    if not rows:
        print(f"no jobs in {namespace}; submit one with: lab submit --gpus 1 -- python train.py")
        return
    table = [("JOB", "STATE", "AGE", "NODES", "GPUS", "GPU-TYPE", "REGION", "PODS", "REASON")]
    for r in rows:
        pods = ",".join(f"{p['phase']}@{p['node'] or '-'}" for p in r["pods"]) or "-"
        table.append((r["job"], r["state"], r["age"], str(r["nodes"]), str(r["gpus_per_node"]), r["gpu_type"],
                      r["region"], pods, r["reason"] or "-"))  # fmt: skip
    widths = [max(len(t[i]) for t in table) for i in range(len(table[0]) - 1)]
    for t in table:
        print("  ".join(c.ljust(w) for c, w in zip(t, widths, strict=False)) + "  " + t[-1])


def run(argv: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.cmd == "submit":
        if args.file:
            given = {
                a.dest
                for a in _submit_actions(parser)
                if any(w == o or w.startswith(o + "=") for o in a.option_strings for w in argv)
            }
            if args.command[1:] if args.command[:1] == ["--"] else args.command:
                given.add("command")
            _job_file(args, {}, given)
        if args.gpus is None:
            raise LabError(
                "--gpus: give the GPUs per node (8, or A100:8), here or as gpus: in a job file (-f)"
            )
    if args.cmd == "completion":
        from clusterspec.completion import script

        print(script(parser, "lab", args.shell), end="")
        return 0
    from labctl.kube import Kube

    settings_file = args.settings or os.environ.get("LAB_SETTINGS") or None
    if args.cmd == "image":
        settings = Settings.load(
            None if settings_file else Kube(args.kubeconfig, args.context), settings_file
        )
        snap = build_snapshot(args.path)
        _image(settings, snap, push=args.push, build=True, region=None)  # image build builds or says why not
        return 0
    kube = Kube(args.kubeconfig, args.context)
    try:
        if args.cmd in ("submit", "ssh-config", "tensorboard"):
            settings = Settings.load(kube, settings_file)
        if args.cmd == "submit":
            _submit(args, kube, settings)
            return 0
        if args.cmd == "ssh-config":
            from labctl import sshconfig

            if not settings.data.ssh_machines:
                raise LabError("the cluster has no SSH machines (researchers.ssh_machines)")
            user = args.user or _identity(kube, args)
            path = sshconfig.write(settings.data, user, Path(args.ssh_dir), args.identity)
            print(f"wrote {path} for {user}; try: ssh {settings.data.ssh_machines[0][0]} (on the VPN)")
            if hint := sshconfig.idle_hint(settings.data):
                print(hint)
            return 0
        namespace = args.namespace or kube.default_namespace
        if args.cmd == "status":
            _status(kube, namespace, args.output)
        elif args.cmd == "logs":
            chunks = (kube.all_logs(namespace, args.job, args.follow) if args.all
                      else kube.logs(namespace, args.job, args.index, args.follow))  # fmt: skip
            kube.exit_code = 0
            for chunk in chunks:
                sys.stdout.write(chunk)
                sys.stdout.flush()
            if args.follow and kube.exit_code:  # -f ends with the command's own status
                why = getattr(kube, "exit_reason", "") or f"its command exited with code {kube.exit_code}"
                print(f"lab: job {args.job}: {why}", file=sys.stderr)
                return min(kube.exit_code, 255)
        elif args.cmd == "cancel":
            kube.get_job(namespace, args.job)
            gone = kube.cancel(namespace, args.job)
            print(f"cancelled {args.job}: deleted {', '.join(gone)} and its pods")
        elif args.cmd == "tensorboard":
            _, user = _where(kube, args, settings, _identity(kube, args))
            url = kube.tensorboard(
                namespace, args.job, settings.tensorboard_image, args.timeout, settings.uid(user)
            )
            print(f"TensorBoard for {args.job}: {url}  (opens on the VPN; stops with lab cancel {args.job})")
    finally:
        kube.close()
    return 0


def _unreachable(e: Exception) -> str:
    """One line for a cluster that does not answer (refused, no route, TLS, DNS), not the HTTP client's traceback."""
    reason = getattr(e, "reason", None)
    detail = str(reason or e).split(": ", 1)[-1].rstrip(")\"'")
    return f"the cluster does not answer ({type(reason or e).__name__}: {detail}); is the VPN connected and your kubeconfig's server right?"


def main(argv: list[str] | None = None) -> None:
    import urllib3

    try:
        code = run(sys.argv[1:] if argv is None else argv)
    except urllib3.exceptions.HTTPError as e:
        print(f"lab: {_unreachable(e)}", file=sys.stderr)
        code = 2
    except LabError as e:
        print(f"lab: {e.lines[0]}", file=sys.stderr)
        code = getattr(e, "code", 2)
    except KeyboardInterrupt:
        code = 130
    sys.exit(code)


if __name__ == "__main__":
    main()
