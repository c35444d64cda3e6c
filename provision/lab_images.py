"""The images the lab owns, in its own ECR registry (issue 36): the autoscaler's, built from deploy/Dockerfile and
pushed by `invoke push-autoscaler`, and mirrors of the third-party images the cluster runs (flannel, kube-router,
the exporters, ...), copied by `invoke mirror-images`. Terraform makes their repositories in the primary region
(terraform/roots/region/lab_images.tf.j2: immutable tags, scan on push, the cluster's KMS key).

- ``autoscaler_image``: the spec's ``autoscaler.image`` when set, else ``<registry>/<cluster>/autoscaler:<version>``
  (the registry: ``researchers.registry`` or ``LAB_REGISTRY``, the primary root's output ``registry_host``). No
  default under a namespace the project does not control.
- ``authorization``: ``Basic <token>`` for an ECR registry host (GetAuthorizationToken, the caller's credentials),
  with which `invoke pin-images` reads the lab's own images: never anonymously, never trusting what an unauthenticated
  request is served.
- ``push_autoscaler`` and ``mirror_images`` need a container tool (Docker for the build; crane or skopeo for the
  copies); without one they say so in one line. A mirror is copied by its pinned digest and its digest read back
  with credentials: it must be the content provision/data/images.yaml pins.
- ``not_in_registry``: the order of day one, checked. The mirrors and the lab's own images must be in ECR, at their
  pinned digests, before a deploy names them (every deploy task: provision/images.py ``check_pinned``; `invoke up`
  after the primary region's apply, which makes the repositories: provision/cluster_addons.py). Otherwise the deploy
  refuses in one line with the task to run (`invoke mirror-images`, `invoke push-autoscaler`), instead of pods left
  in ImagePullBackOff.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from clusterspec.errors import UserError
from clusterspec.spec import Cluster
from provision import images, registry
from provision.checkout import REPO

ECR_HOST = re.compile(r"^(\d{12})\.dkr\.ecr\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$")
REGISTRY_ENV = "LAB_REGISTRY"
DOCKERFILE = "deploy/Dockerfile"
Run = Callable[..., subprocess.CompletedProcess]


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("gpu-research-cluster")
    except PackageNotFoundError:
        return "0.1.0"


def autoscaler_repository(cluster: Cluster) -> str:
    return f"{cluster.name}/autoscaler"


def standard_repository(cluster: Cluster) -> str:
    """The lab's standard image (deploy/standard-image), which the GPU image pre-pulls at bake time."""
    from clusterspec import standard_image

    return f"{cluster.name}/{standard_image.repository()}"


def mirror_repository(cluster: Cluster, image: str) -> str:
    ref = registry.parse(image)
    return f"{cluster.name}/mirror/{ref.registry}/{ref.repository}"


def third_party(table: dict[str, dict] | None = None) -> list[str]:
    """The images of provision/data/images.yaml that are not the lab's own (mirrored to ECR)."""
    table = images.table() if table is None else table
    return [name for name, e in table.items() if not str(e.get("source", "")).startswith("cluster.yaml")]


def local_registry(cluster: Cluster) -> str:
    """The registry of the embedded AWS's account (moto's 123456789012) in the primary region: where the local
    stacks (make demo, the local cluster) name the lab's images, as a fresh account's ECR would."""
    return f"123456789012.dkr.ecr.{cluster.primary_region}.amazonaws.com"


def use_local_registry(cluster: Cluster) -> None:
    """For a local stack: the embedded account's registry unless one is set (researchers.registry or the env)."""
    if not cluster.researchers.registry:
        os.environ.setdefault(REGISTRY_ENV, local_registry(cluster))


def registry_host(cluster: Cluster, environ: dict | None = None) -> str:
    environ = dict(os.environ) if environ is None else environ
    host = cluster.researchers.registry or environ.get(REGISTRY_ENV)
    if not host:
        raise UserError(
            "the lab's registry is not known: set researchers.registry in cluster.yaml (the primary region's "
            f"Terraform output registry_host) or {REGISTRY_ENV}; the autoscaler's image lives there"
        )
    return host


def autoscaler_image(cluster: Cluster, environ: dict | None = None) -> str:
    if cluster.autoscaler.image:
        return cluster.autoscaler.image
    return f"{registry_host(cluster, environ)}/{autoscaler_repository(cluster)}:{version()}"


def standard_image(cluster: Cluster, environ: dict | None = None) -> str:
    """``<registry>/<cluster>/standard:<tag>`` in the lab's registry (UserError while it is not known)."""
    from clusterspec import standard_image as standard

    sw = cluster.software
    return standard.reference(
        registry_host(cluster, environ), cluster.name, sw.cuda, cluster.researchers.python
    )


def prepull_blocker(cluster: Cluster, session=None, environ: dict | None = None) -> str | None:
    """Why a real bake cannot pre-pull the standard image yet (None: it can, and must). On a fresh account the bake
    comes before the roots that make the build instance's profile (global) and the repository (primary), so the
    first image goes without it and the next bake, after `invoke push-standard-image`, has it."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from provision.packer.variables import bake_instance_profile

    session = session or boto3.Session()
    image = standard_image(cluster, environ)
    ref = registry.parse(image)
    m = ECR_HOST.match(ref.registry)
    if not m:
        return f"{ref.registry} is not an ECR registry: the bake's profile reads the lab's ECR only"
    profile = bake_instance_profile(cluster)
    try:
        session.client("iam").get_instance_profile(InstanceProfileName=profile)
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") == "NoSuchEntity":
            return f"the build instance's profile {profile} does not exist yet (`invoke up --region global` makes it)"
        raise UserError(f"iam:GetInstanceProfile {profile}: {e}".splitlines()[0]) from None
    except BotoCoreError as e:
        raise UserError(f"iam:GetInstanceProfile {profile}: {e}".splitlines()[0]) from None
    try:
        session.client("ecr", region_name=m[2]).describe_images(
            registryId=m[1], repositoryName=ref.repository, imageIds=[{"imageTag": ref.tag}]
        )
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") in (
            "RepositoryNotFoundException",
            "ImageNotFoundException",
        ):
            return f"{image} is not in the lab's ECR yet (`invoke push-standard-image`)"
        raise UserError(f"ecr:DescribeImages {ref.repository}: {e}".splitlines()[0]) from None
    except BotoCoreError as e:
        raise UserError(f"ecr:DescribeImages {ref.repository}: {e}".splitlines()[0]) from None
    return None


def authorization(host: str, session=None) -> str | None:
    """``Basic <token>`` for an ECR registry (its account and region from the host name); None for others."""
    m = ECR_HOST.match(host)
    if not m:
        return None
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    session = session or boto3.Session()
    try:
        data = session.client("ecr", region_name=m[2]).get_authorization_token(registryIds=[m[1]])
    except (BotoCoreError, ClientError) as e:
        raise registry.RegistryError(f"{host}: no ECR credentials ({e})".splitlines()[0]) from None
    return f"Basic {data['authorizationData'][0]['authorizationToken']}"


def resolve(image: str, session=None, **kwargs) -> str:
    """The digest of ``image``, with the lab's ECR credentials where it lives in ECR."""
    return registry.digest(
        image, authorization=authorization(registry.parse(image).registry, session), **kwargs
    )


def _tool(names: tuple[str, ...], what: str) -> str:
    for name in names:
        if shutil.which(name):
            return name
    raise UserError(f"no {' or '.join(names)} on PATH: {what} needs one; run this task where it is installed")


def _docker_running(run: Run) -> bool:
    return run(["docker", "info"], capture_output=True, check=False).returncode == 0


def _login_password(host: str, session=None) -> str:
    token = authorization(host, session)
    if token is None:
        raise UserError(f"{host} is no ECR registry (<account>.dkr.ecr.<region>.amazonaws.com)")
    return base64.b64decode(token.removeprefix("Basic ")).decode().split(":", 1)[1]


@dataclass
class Pushed:
    image: str
    digest: str


def push_autoscaler(cluster: Cluster, *, run: Run = subprocess.run, session=None, environ: dict | None = None,
                    resolve_digest: Callable[[str], str] | None = None) -> Pushed:  # fmt: skip
    """Build deploy/Dockerfile, push it to the lab's repository and record its digest (read back with credentials)
    in provision/data/images.yaml."""
    if not shutil.which("docker") or not _docker_running(run):
        raise UserError("no Docker engine here (`docker info` fails): push-autoscaler builds deploy/Dockerfile "
                        "with Docker; run it on a machine with a Docker engine and AWS credentials")  # fmt: skip
    image = autoscaler_image(cluster, environ)
    _build_and_push(image, ["-f", DOCKERFILE, "."], run, session)
    digest = (resolve_digest or (lambda i: resolve(i, session)))(image)
    record(image, digest, "cluster.yaml autoscaler.image (deploy/Dockerfile; invoke push-autoscaler)")
    return Pushed(image, digest)


def _build_and_push(image: str, build: list[str], run: Run, session) -> None:
    host = registry.parse(image).registry
    password = _login_password(host, session)
    for argv, stdin in (
        (["docker", "login", "--username", "AWS", "--password-stdin", host], password),
        (["docker", "build", "-t", image, *build], None),
        (["docker", "push", image], None),
    ):
        done = run(argv, input=stdin, text=True, capture_output=True, check=False, cwd=REPO)
        if done.returncode != 0:
            last = (done.stderr or done.stdout or "").strip().splitlines()[-1:] or ["no output"]
            raise UserError(f"{' '.join(argv[:2])}: {last[0]}")


STANDARD_DIR = "deploy/standard-image"


def push_standard(cluster: Cluster, *, run: Run = subprocess.run, session=None, environ: dict | None = None,
                  resolve_digest: Callable[[str], str] | None = None) -> Pushed:  # fmt: skip
    """Build deploy/standard-image for the spec's CUDA, Ubuntu and Python and push it to the lab's repository
    (``<registry>/<cluster>/standard:<tag>``), which the GPU image pre-pulls at bake time; its digest read back
    with credentials."""
    if not shutil.which("docker") or not _docker_running(run):
        raise UserError("no Docker engine here (`docker info` fails): push-standard-image builds "
                        f"{STANDARD_DIR} with Docker; run it on a machine with a Docker engine and AWS credentials")  # fmt: skip
    sw = cluster.software
    image = standard_image(cluster, environ)
    args = ["--build-arg", f"BASE=nvidia/cuda:{sw.cuda}.0-cudnn-runtime-ubuntu{sw.ubuntu}",
            "--build-arg", f"PYTHON={cluster.researchers.python}", STANDARD_DIR]  # fmt: skip
    _build_and_push(image, args, run, session)
    return Pushed(image, (resolve_digest or (lambda i: resolve(i, session)))(image))


def record(image: str, digest: str, source: str, path: Path | None = None) -> None:
    """Set ``image``'s digest in the table, adding its line when the table does not list it yet."""
    from provision import pin_images

    path = path or images.TABLE
    images.table.cache_clear()
    if image not in images.table(path):
        with path.open("a") as f:
            f.write(f'- {{image: "{image}", digest: null, source: "{source}"}}\n')
        images.table.cache_clear()
    pin_images.record(path, {image: digest})
    images.table.cache_clear()


@dataclass
class Copy:
    source: str  # <image>@<pinned digest>
    target: str  # <registry>/<cluster>/mirror/...:<tag>
    digest: str


def mirror_plan(cluster: Cluster, host: str, table: dict[str, dict] | None = None) -> list[Copy]:
    """The copies `invoke mirror-images` makes: every third-party image by its pinned digest (refused while one has
    none: `invoke pin-images` first, so the mirror is what was reviewed)."""
    table = images.table() if table is None else table
    unpinned = [i for i in third_party(table) if not table[i].get("digest")]
    if unpinned:
        raise UserError(f"{unpinned[0]} has no digest in {images.TABLE} (and {len(unpinned) - 1} more): run "
                        "`invoke pin-images` first; the mirror copies exactly the pinned content")  # fmt: skip
    out = []
    for image in third_party(table):
        tag = registry.parse(image).tag
        out.append(Copy(f"{image}@{table[image]['digest']}", f"{host}/{mirror_repository(cluster, image)}:{tag}",
                        table[image]["digest"]))  # fmt: skip
    return out


def mirror_images(cluster: Cluster, *, run: Run = subprocess.run, session=None, environ: dict | None = None,
                  resolve_digest: Callable[[str], str] | None = None) -> list[str]:  # fmt: skip
    tool = _tool(("crane", "skopeo"), "mirror-images (copying images between registries)")
    host = registry_host(cluster, environ)
    plan = mirror_plan(cluster, host)
    password = _login_password(host, session)
    if tool == "crane":
        login = ["crane", "auth", "login", host, "--username", "AWS", "--password-stdin"]
        done = run(login, input=password, text=True, capture_output=True, check=False)
        if done.returncode != 0:
            raise UserError(f"crane auth login {host}: {(done.stderr or '').strip()[:200]}")
    lines = []
    check = resolve_digest or (lambda i: resolve(i, session))
    for c in plan:
        argv = (["crane", "copy", c.source, c.target] if tool == "crane" else
                ["skopeo", "copy", "--all", "--preserve-digests", "--dest-creds", f"AWS:{password}",
                 f"docker://{c.source}", f"docker://{c.target}"])  # fmt: skip
        done = run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise UserError(f"copying {c.source}: {(done.stderr or done.stdout or '').strip()[:200]}")
        got = check(c.target)
        if got != c.digest:
            raise UserError(f"{c.target}: the mirror serves {got}, not the pinned {c.digest}")
        lines.append(f"{c.target}: {got}")
    return lines


def producer(cluster: Cluster, ref: str) -> str:
    """The task that puts ``ref`` (an image in the lab's registry) there."""
    if f"/{cluster.name}/mirror/" in ref:
        return "invoke mirror-images"
    if f"/{standard_repository(cluster)}:" in ref:
        return "invoke push-standard-image"
    return "invoke push-autoscaler"


def not_in_registry(refs: Iterable[str], cluster: Cluster, session=None) -> list[str]:
    """The references of ``refs`` in the lab's registry (``<registry>/...:<tag>@sha256:...``) that its ECR does not
    hold at that digest, asked with credentials (ecr:DescribeImages by digest). Others (another registry, no digest:
    refused elsewhere) are not asked about."""
    host = registry_host(cluster)
    m = ECR_HOST.match(host)
    wanted = sorted({r for r in refs if r.startswith(f"{host}/") and "@sha256:" in r})
    if not wanted:
        return []
    if not m:
        raise UserError(f"{host} is no ECR registry (<account>.dkr.ecr.<region>.amazonaws.com): the lab's images "
                        "live in its ECR")  # fmt: skip
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    ecr = (session or boto3.Session()).client("ecr", region_name=m[2])
    out = []
    for ref in wanted:
        name, _, digest = ref.partition("@")
        repository = registry.parse(name).repository
        try:
            ecr.describe_images(
                registryId=m[1], repositoryName=repository, imageIds=[{"imageDigest": digest}]
            )
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") in (
                "RepositoryNotFoundException",
                "ImageNotFoundException",
            ):
                out.append(ref)
                continue
            raise UserError(f"ecr:DescribeImages {repository}: {e}".splitlines()[0]) from None
        except BotoCoreError as e:
            raise UserError(f"ecr:DescribeImages {repository}: {e}".splitlines()[0]) from None
    return out


def missing_mirrors(cluster: Cluster, session=None, table: dict[str, dict] | None = None) -> list[str]:
    """The pinned third-party images whose copy the lab's ECR mirror does not hold yet (`invoke mirror-images`
    has not run since they were pinned)."""
    table = images.table() if table is None else table
    prefix = images.mirror_prefix(cluster)
    if prefix is None:  # the registry is not known: every deploy says so itself
        return []
    refs = [
        f"{images.mirror_name(i, prefix)}@{table[i]['digest']}"
        for i in third_party(table)
        if table[i].get("digest")
    ]
    return not_in_registry(refs, cluster, session)
