"""Building and pushing a job's dependency image (labctl/deps.py) with whichever container engine works here: docker,
else buildah.

An engine "works" when it answers (``docker info``, ``buildah version``); a docker client without a daemon does
not count. Without one, the context is written to the cache and ``lab`` prints the command that builds it. Only a
change of the requirements needs a build: the code travels as its snapshot (labctl/snapshot.py).
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from labctl.deps import DOCKERFILE
from labctl.errors import LabError


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lab"


def _answers(argv: list[str]) -> bool:
    if shutil.which(argv[0]) is None:
        return False
    try:
        return subprocess.run(argv, capture_output=True, timeout=20, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def find_engine() -> str | None:
    forced = os.environ.get("LAB_ENGINE")
    if forced is not None:
        return forced or None  # LAB_ENGINE= (empty) means: build nothing, write the context
    for name, probe in (("docker", ["docker", "info"]), ("buildah", ["buildah", "version"])):
        if _answers(probe):
            return name
    return None


def write_context(tag: str, data: bytes) -> Path:
    out = cache_dir() / "contexts" / f"{tag}.tar"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    return out


def how_to_build(path: Path, ref: str) -> str:
    return f"docker build -f {DOCKERFILE} -t {ref} - < {path}"


def image_exists(engine: str, ref: str) -> bool:
    argv = ["docker", "image", "inspect", ref] if engine == "docker" else ["buildah", "inspect", ref]
    return subprocess.run(argv, capture_output=True, check=False).returncode == 0


def build(engine: str, tag: str, data: bytes, ref: str) -> None:
    if engine == "docker":
        proc = subprocess.run(["docker", "build", "-f", DOCKERFILE, "-t", ref, "-"], input=data, check=False)
    else:
        with tempfile.TemporaryDirectory(prefix="lab-context-") as tmp:
            with tarfile.open(write_context(tag, data)) as tar:
                tar.extractall(tmp, filter="data")
            proc = subprocess.run(["buildah", "build", "-f", DOCKERFILE, "-t", ref, tmp], check=False)
    if proc.returncode != 0:
        raise LabError(f"{engine} build of {ref} failed (status {proc.returncode}); its output is above")


def ecr_login(engine: str, registry: str) -> None:
    """Log the engine in to an ECR registry with a token from the caller's AWS credentials."""
    if ".ecr." not in registry:
        return
    import boto3

    region = registry.split(".ecr.", 1)[1].split(".", 1)[0]
    data = boto3.client("ecr", region_name=region).get_authorization_token()["authorizationData"][0]
    user, _, password = base64.b64decode(data["authorizationToken"]).decode().partition(":")
    subprocess.run(
        [engine, "login", "--username", user, "--password-stdin", registry],
        input=password.encode(),
        capture_output=True,
        check=True,
    )


def in_ecr(ref: str) -> bool:
    """Whether an ECR repository already holds this tag (tags are immutable content hashes: nothing to push)."""
    host, _, rest = ref.partition("/")
    if ".ecr." not in host:
        return False
    import boto3

    repo, _, tag = rest.rpartition(":")
    region = host.split(".ecr.", 1)[1].split(".", 1)[0]
    ecr = boto3.client("ecr", region_name=region)
    try:
        ecr.describe_images(repositoryName=repo, imageIds=[{"imageTag": tag}])
        return True
    except ecr.exceptions.ImageNotFoundException:
        return False


def push(engine: str, ref: str) -> None:
    if in_ecr(ref):
        print(f"{ref} is already in the registry")
        return
    ecr_login(engine, ref.split("/", 1)[0])
    proc = subprocess.run([engine, "push", ref], check=False)
    if proc.returncode != 0:
        raise LabError(f"{engine} push {ref} failed (status {proc.returncode}); its output is above")
