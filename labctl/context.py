"""The code snapshot: the researcher's code as a deterministic tar, and what was left out of it, said in one line each.

What enters: in a git work tree, every tracked file as it is on disk now (uncommitted changes included, deleted
files left out) and the untracked files git does not ignore (``git ls-files --cached --others --exclude-standard``);
outside git, every file under PATH. Left out, each reason said in one line: untracked files in the top-level data
folders (:data:`DATA_DIRS`: data belongs on ``/datasets`` or in git), files over the size limit (``--max-file-mb``,
default 100), and whatever ``.dockerignore`` excludes (Docker's own matcher, ``docker.utils.build.PatternMatcher``;
tracked files it drops are named). Never: ``.git``, virtual environments (a directory holding ``pyvenv.cfg``, or
named ``.venv``/``venv``), caches, ``.lab/``. Tracked files in data folders do enter: nanoGPT's
``data/shakespeare_char/prepare.py`` is code.

Same tree, same bytes: entries sorted by path, mtime 0, uid/gid 0 without names, modes normalised to 0644 or 0755
(executable bit kept), symlinks kept as links; so the SHA-256 of the tar is the code's content hash. Files are read
only after their size is checked, one at a time.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from docker.utils.build import PatternMatcher

from labctl.errors import LabError

DATA_DIRS = frozenset(
    {"data", "datasets", "results", "checkpoints", "outputs", "out", "wandb", "mlruns", "runs"}
)
NEVER = frozenset(
    {".git", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".lab"}
)
REQUIREMENTS = ("requirements.txt", "pyproject.toml")
DEFAULT_MAX_FILE_MB = 100


@dataclass(frozen=True)
class Snapshot:
    root: Path
    files: tuple[str, ...]  # relative POSIX paths, sorted
    data: bytes  # the tar
    notes: tuple[str, ...] = ()  # what was left out or is worth knowing, one line each
    git: str = ""  # "<commit>" or "<commit>+dirty"; "" outside git

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def tag(self) -> str:
        return self.digest[:16]

    def gzipped(self) -> bytes:
        """The tar gzipped deterministically (no name, mtime 0): the same code is the same object in the bucket."""
        buf = io.BytesIO()
        with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="", compresslevel=6) as gz:
            gz.write(self.data)
        return buf.getvalue()

    def read(self, rel: str) -> str | None:
        path = self.root / rel
        return path.read_text() if rel in self.files and path.is_file() else None

    @property
    def requirements(self) -> str | None:
        """The dependency file the snapshot has (requirements.txt first), or None."""
        return next((r for r in REQUIREMENTS if r in self.files), None)


def _git(root: Path, *args: str) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False)
    except FileNotFoundError:
        return None


def _git_lists(root: Path) -> tuple[set[str], set[str]] | None:
    """(tracked, untracked-not-ignored) under root, or None outside a git work tree."""
    inside = _git(root, "rev-parse", "--show-prefix")
    if inside is None or inside.returncode != 0:
        return None

    def ls(*flags: str) -> set[str]:
        out = _git(root, "ls-files", "-z", *flags, "--", ".")
        return {p for p in out.stdout.decode().split("\0") if p}

    return ls("--cached"), ls("--others", "--exclude-standard")


def _git_state(root: Path) -> tuple[str, list[str]]:
    """(commit, the paths with uncommitted changes under root)."""
    head = _git(root, "rev-parse", "--short=12", "HEAD")
    commit = head.stdout.decode().strip() if head is not None and head.returncode == 0 else "no-commit"
    status = _git(root, "status", "--porcelain", "-z", "--untracked-files=no", "--", ".")
    changed = []
    if status is not None and status.returncode == 0:
        changed = sorted({e[3:] for e in status.stdout.decode().split("\0") if len(e) > 3 and e[2] == " "})
    return commit, changed


def _walk(root: Path) -> set[str]:
    found = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in NEVER]
        rel = Path(dirpath).relative_to(root)
        found |= {(rel / f).as_posix() for f in filenames}
    return found


def _dockerignore(root: Path) -> PatternMatcher | None:
    path = root / ".dockerignore"
    if not path.is_file():
        return None
    lines = [ln.strip() for ln in path.read_text().splitlines()]
    return PatternMatcher([ln for ln in lines if ln and not ln.startswith("#")])


def _never(rel: str, venvs: set[str]) -> bool:
    parts = rel.split("/")
    if any(p in NEVER for p in parts[:-1]) or parts[-1] == ".git" or rel.endswith((".pyc", ".pyo")):
        return True
    return any(rel.startswith(v + "/") for v in venvs)


def _venvs(root: Path, files: set[str]) -> set[str]:
    """Directories of the listed files that are virtual environments (they hold pyvenv.cfg)."""
    return {f.rsplit("/", 1)[0] for f in files if f.endswith("/pyvenv.cfg")} | {
        d for d in {f.split("/", 1)[0] for f in files if "/" in f} if (root / d / "pyvenv.cfg").is_file()
    }


def _list(names: list[str], most: int = 3) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def _mb(n: int) -> str:
    return f"{n / 1e6:.0f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def select_files(root: Path, max_file_mb: float = DEFAULT_MAX_FILE_MB) -> tuple[list[str], list[str], str]:
    """(the files that enter, one line per reason something did not or is worth knowing, the git state)."""
    lists = _git_lists(root)
    tracked, untracked = lists if lists is not None else (set(), _walk(root))
    listed = tracked | untracked
    venvs = _venvs(root, listed)
    matcher = _dockerignore(root)
    limit = max_file_mb * 1e6 if max_file_mb and max_file_mb > 0 else None
    keep, ignored_tracked, data_left, too_big = [], [], [], []
    for rel in sorted(listed):
        path = root / rel
        if _never(rel, venvs) or not (path.is_file() or path.is_symlink()):
            continue  # never code, deleted in the work tree, or a submodule
        if matcher is not None and matcher.matches(rel):
            if rel in tracked:
                ignored_tracked.append(rel)
            continue
        parts = rel.split("/")
        if rel not in tracked and len(parts) > 1 and parts[0] in DATA_DIRS:
            data_left.append(rel)
            continue
        if limit is not None and not path.is_symlink() and (size := path.stat().st_size) > limit:
            too_big.append((rel, size))
            continue
        keep.append(rel)
    notes = []
    if ignored_tracked:
        notes.append(f"left out {len(ignored_tracked)} tracked file{'s' * (len(ignored_tracked) > 1)} that "
                     f".dockerignore excludes: {_list(ignored_tracked)}")  # fmt: skip
    if data_left:
        folders = sorted({r.split("/", 1)[0] + "/" for r in data_left})
        notes.append(f"left out {len(data_left)} untracked file{'s' * (len(data_left) > 1)} in {', '.join(folders)} "
                     "(data travels on /datasets or in git, not with the code)")  # fmt: skip
    if too_big:
        names = [f"{r} ({_mb(s)})" for r, s in sorted(too_big, key=lambda x: -x[1])]
        notes.append(f"left out {len(too_big)} file{'s' * (len(too_big) > 1)} over {max_file_mb:g} MB: {_list(names)} "
                     "(put data on /datasets; --max-file-mb N raises the limit)")  # fmt: skip
    git = ""
    if lists is not None:
        commit, changed = _git_state(root)
        git = commit
        if changed:
            git += "+dirty"
            notes.append(f"uncommitted changes in {len(changed)} file{'s' * (len(changed) > 1)} ({_list(changed)}): "
                         f"the job runs them as they are on disk, on top of {commit}")  # fmt: skip
    return keep, notes, git


def _info(name: str, size: int = 0, mode: int = 0o644) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, mode, 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def build_snapshot(root: str | Path, max_file_mb: float = DEFAULT_MAX_FILE_MB) -> Snapshot:
    root = Path(root).resolve()
    if not root.is_dir():
        raise LabError(f"{root}: not a directory; give the folder holding your code (default: .)")
    files, notes, git = select_files(root, max_file_mb)
    if not any(r in files for r in (*REQUIREMENTS, "setup.py")):
        notes.append(
            "no requirements.txt, pyproject.toml or setup.py: the job gets the standard image's packages only"
        )
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for rel in files:
            path = root / rel
            if path.is_symlink():
                info = _info(rel, mode=0o777)
                info.type, info.linkname = tarfile.SYMTYPE, os.readlink(path)
                tar.addfile(info)
                continue
            mode = 0o755 if os.access(path, os.X_OK) else 0o644
            with path.open("rb") as f:
                tar.addfile(_info(rel, path.stat().st_size, mode), f)
    return Snapshot(root, tuple(files), buf.getvalue(), tuple(notes), git)
