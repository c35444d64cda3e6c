"""What each image of this repository runs, as its Dockerfile says, mapped to this host: ENTRYPOINT, CMD, ENV, USER,
and which virtual environment stands in for the image's install prefix. A pod whose every container uses one of
these images can run as local processes (localcluster/kubelet/agent.py); any other is shown running without one."""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

VENV_BIN = str(Path(sys.executable).parent)

# The standard image's /opt/venv on this host: a virtual environment of the image's pinned packages built from the
# system's Python (scripts/install-tools.sh), so that every uid can run it, as every uid can run the image's. The
# interpreter of a development checkout is often out of other uids' reach (pyenv under /root, mode 0700), and a job
# run as root would hide exactly what its uid may not do. Without it, this interpreter's venv stands in.
STANDARD_VENV = Path(os.environ.get("LAB_STANDARD_VENV", "/opt/lab/standard-venv"))


def closed_folder(path: Path) -> Path | None:
    """The first of ``path``'s folders (itself or a parent) that other users may not enter (no ``o+x``), or None:
    a pod run as its own uid must reach its folder here, as a container reaches its volumes through its mounts."""
    path = Path(path).resolve()
    for p in [path, *path.parents]:
        if p.exists() and not p.stat().st_mode & 0o001:
            return p
    return None


def open_folder(prefix: str) -> Path:
    """A new folder under the temp dir that every uid may enter (mode 0711): a pods' root where this host's own
    folders are closed (:func:`closed_folder`). The caller removes it."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    folder.chmod(0o711)
    return folder


def standard_bin() -> str:
    """The standard image's venv bin folder on this host (:data:`STANDARD_VENV`, else this interpreter's)."""
    return str(STANDARD_VENV / "bin") if (STANDARD_VENV / "bin" / "python").exists() else VENV_BIN


@dataclass(frozen=True)
class ImageConfig:
    """An image's config (its Dockerfile's ENTRYPOINT, CMD, ENV, USER), with its install prefix mapped to here."""

    entrypoint: tuple[str, ...]
    cmd: tuple[str, ...]
    env: dict = field(default_factory=dict)
    user: tuple[int, int] | None = None
    venv_bin: str | None = None  # the image's venv on this host, first on PATH (None: this interpreter's)


# Only the standard image runs (below). The autoscaler's image (deploy/Dockerfile) is not started as a process: its
# Deployment reads the in-cluster token at /var/run/secrets/... and assumes its IAM role through the web identity
# token with AWS itself, neither of which a process of this host has, so it crash-looped (issue 37: 1,016 restarts
# in 45 minutes of the local cluster); the local stacks run `autoscaler run` themselves against the embedded AWS, and
# the Deployment's pods stay Running without a process, as on a kwok node.
IMAGES: dict[str, ImageConfig] = {}


# deploy/standard-image/Dockerfile: the lab's standard image under any registry (``<registry>/<cluster>/standard``):
# no ENTRYPOINT or CMD, its /opt/venv (torch, numpy, boto3, ...) is :func:`standard_bin`, no USER (jobs set theirs).
STANDARD = ImageConfig(entrypoint=(), cmd=(), env={"PYTHONUNBUFFERED": "1"})


def image_config(image: str) -> ImageConfig | None:
    """The config of ``image`` when it is one of this repository's, else None."""
    from clusterspec import standard_image

    repo = image.split("@", 1)[0]
    if ":" in repo.rsplit("/", 1)[-1]:
        repo = repo.rsplit(":", 1)[0]
    if repo.endswith("/" + standard_image.repository()):
        return replace(STANDARD, venv_bin=standard_bin())
    return IMAGES.get(repo.rsplit("/", 1)[-1])


def runnable(pod: dict) -> bool:
    """Whether every container of ``pod`` (init containers too) uses an image of this repository."""
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or ()
    inits = spec.get("initContainers") or ()
    return bool(containers) and all(
        image_config(c.get("image", "")) is not None for c in [*inits, *containers]
    )
