"""The job's dependencies: the standard image when it already has them, else an image built from them alone.

The standard image (clusterspec/data/standard_image.yaml) carries the common frameworks; a requirements file whose
every line it satisfies (same distribution, the pinned version inside the line's specifier, no URL or option lines)
needs no image at all, which is the usual case and costs no build and no push. Otherwise ``lab`` builds one image,
``FROM`` the standard image with the requirements installed in a single layer and nothing else: its tag is the hash
of the standard image and the requirements, so the code can change any number of times without a rebuild (the code
travels as its snapshot, labctl/snapshot.py), and a new node pulls only that layer on top of what its AMI has.
"""

from __future__ import annotations

import hashlib
import io
import re
import tarfile
import tomllib
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from labctl.context import Snapshot
from labctl.errors import LabError

DOCKERFILE = "Dockerfile"


@dataclass(frozen=True)
class Deps:
    source: str | None  # requirements.txt, pyproject.toml or None
    lines: tuple[str, ...]  # the requirements as written
    missing: tuple[str, ...]  # the ones the standard image does not satisfy

    @property
    def standard(self) -> bool:
        return not self.missing

    def tag(self, standard_image: str) -> str:
        text = standard_image + "\n" + "\n".join(self.lines)
        return "deps-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def _requirement_lines(text: str) -> list[str]:
    out = []
    for raw in text.splitlines():
        line = re.split(r"\s+#", raw, maxsplit=1)[0].strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def requirements(snap: Snapshot) -> tuple[str | None, list[str]]:
    source = snap.requirements
    if source is None:
        return None, []
    text = snap.read(source) or ""
    if source == "requirements.txt":
        return source, _requirement_lines(text)
    try:
        project = tomllib.loads(text).get("project") or {}
    except tomllib.TOMLDecodeError as e:
        raise LabError(f"{snap.root / source}: not TOML ({e})") from None
    return source, [str(d) for d in project.get("dependencies") or ()]


def local(line: str) -> bool:
    """A line naming the project's own files (``.``, ``-e .``, ``./wheels/x.whl``): installed when the job starts,
    next to the code, never into an image (the image has no code)."""
    if line.startswith(("-e ", "--editable")):
        line = line.split(None, 1)[1] if " " in line else line.partition("=")[2]
    return line.startswith((".", "/", "file:"))


def installable(snap: Snapshot) -> bool:
    """Whether the code is a package its README installs with ``pip install -e .``: a ``setup.py``, or a
    ``pyproject.toml`` with a ``[project]`` or ``[build-system]`` table (not one that only configures tools)."""
    if "setup.py" in snap.files:
        return True
    if "pyproject.toml" not in snap.files:
        return False
    try:
        data = tomllib.loads(snap.read("pyproject.toml") or "")
    except tomllib.TOMLDecodeError as e:
        raise LabError(f"{snap.root / 'pyproject.toml'}: not TOML ({e})") from None
    return "project" in data or "build-system" in data


def build_requires(snap: Snapshot) -> list[str]:
    """The project's build requirements (PEP 518; setuptools when it names none, as pip assumes)."""
    if "pyproject.toml" in snap.files:
        data = tomllib.loads(snap.read("pyproject.toml") or "")
        system = data.get("build-system")
        if system is not None:
            return [str(r) for r in system.get("requires") or ()]
    return ["setuptools>=40.8.0"]


@dataclass(frozen=True)
class Install:
    """What the job's deps init container installs (labctl/jobenv.py): pip ``install`` argument lists, in order."""

    steps: tuple[tuple[str, ...], ...] = ()
    no_build_isolation: bool = (
        False  # the image has the build requirements: nothing fetched to build the project
    )


def plan(snap: Snapshot, d: Deps, packages: dict[str, str], at_start: bool) -> Install:
    """The installs at start: the requirement lines the image lacks when no image is built for them (``at_start``),
    the local ones always, then the project itself, editable, when it is a package (``pip install -e .``)."""
    steps: list[tuple[str, ...]] = []
    wanted = d.missing if at_start else tuple(line for line in d.missing if local(line))
    if wanted and d.source == "requirements.txt":
        steps.append(("-r", "requirements.txt"))
    elif wanted and not installable(snap):
        steps.append(tuple(wanted))
    if installable(snap) and not any(x.replace("-e", "").strip().rstrip("/") == "." for x in d.lines):
        steps.append(("-e", "."))
    norm = {canonicalize_name(k): v for k, v in packages.items()}
    offline = all(satisfied(r, norm) for r in build_requires(snap))
    return Install(tuple(steps), no_build_isolation=offline and bool(steps))


def satisfied(line: str, packages: dict[str, str]) -> bool:
    """Whether the standard image's pinned packages satisfy one requirement line."""
    if line.startswith("-") or "://" in line or line.startswith((".", "/")):
        return False  # options, URLs and local paths: only an install can tell
    try:
        req = Requirement(line)
    except InvalidRequirement:
        return False
    if req.marker is not None and not req.marker.evaluate():
        return True  # not for this platform: nothing to install
    have = packages.get(canonicalize_name(req.name))
    return have is not None and not req.extras and req.specifier.contains(Version(have), prereleases=True)


def resolve(snap: Snapshot, packages: dict[str, str]) -> Deps:
    source, lines = requirements(snap)
    norm = {canonicalize_name(k): v for k, v in packages.items()}
    return Deps(source, tuple(lines), tuple(line for line in lines if not satisfied(line, norm)))


def for_image(d: Deps) -> Deps:
    """The requirements an image is built from: the lines that are not the project's own files."""
    return Deps(
        d.source, tuple(x for x in d.lines if not local(x)), tuple(x for x in d.missing if not local(x))
    )


def dockerfile(standard_image: str, deps: Deps) -> str:
    return "\n".join([
        "# syntax=docker/dockerfile:1",
        "# Generated by `lab` (docs/researchers.md): the standard image and this job's requirements, nothing else;",
        "# the code is not in the image (it is unpacked at start from its snapshot).",
        f"FROM {standard_image}",
        "COPY requirements.txt /tmp/lab/requirements.txt",
        "RUN --mount=type=cache,target=/root/.cache/uv uv pip install -r /tmp/lab/requirements.txt",
        "",
    ])  # fmt: skip


def build_context(standard_image: str, deps: Deps) -> bytes:
    """The image's build context: the Dockerfile and the requirements, deterministic."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, text in ((DOCKERFILE, dockerfile(standard_image, deps)),
                           ("requirements.txt", "\n".join(deps.lines) + "\n")):  # fmt: skip
            blob = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(blob), 0o644, 0
            tar.addfile(info, io.BytesIO(blob))
    return buf.getvalue()
