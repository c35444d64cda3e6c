"""Reading the JSON and YAML files the subcommands take, with one-line errors."""

from __future__ import annotations

import json
import mmap
import sys
from contextlib import contextmanager
from pathlib import Path

import yaml

from autoscaler.core import decode
from autoscaler.core.errors import SnapshotError
from autoscaler.core.gcpause import gc_paused


def read_snapshot(path: str) -> object:
    """The snapshot document at ``path`` (``-``: stdin), its pods, nodes and PDBs decoded lean
    (:func:`autoscaler.core.decode.snapshot`); SnapshotError naming the file, line and column when it is not JSON."""
    return read_json(path, decode.snapshot)


@contextmanager
def _mapped(path: str):
    """The file's bytes (``-``: stdin), mapped rather than copied when it can be: a 400 MB snapshot is not
    copied into memory before it is decoded."""
    if path == "-":
        yield sys.stdin.buffer.read()
        return
    with open(path, "rb") as f:
        try:
            # MAP_POPULATE: the pages are mapped in one call, not one fault at a time as the decoder reaches them
            flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
            m = mmap.mmap(f.fileno(), 0, flags=flags, prot=mmap.PROT_READ)
        except (ValueError, OSError):  # empty, or not a regular file (a pipe)
            yield f.read()
            return
        with m:
            yield m


def _plain(data) -> object:
    return json.loads(data if isinstance(data, bytes | str) else bytes(data))


def read_json(path: str, decoder=_plain) -> object:
    """The JSON document at ``path`` (``-``: stdin) through ``decoder`` (bytes or a buffer in); SnapshotError
    naming the file, line and column when bad."""
    name = "stdin" if path == "-" else path
    try:
        with _mapped(path) as data:
            return _decode(name, data, decoder)
    except FileNotFoundError:
        raise SnapshotError(
            f"{name}: no such file; give the path of a snapshot JSON file (or - for stdin)"
        ) from None
    except (IsADirectoryError, PermissionError) as e:
        raise SnapshotError(
            f"{name}: cannot read it ({e.__class__.__name__}); give a readable JSON file"
        ) from None


def _decode(name: str, text, decoder) -> object:
    try:
        with gc_paused():
            return decoder(text)
    except json.JSONDecodeError as e:
        raise SnapshotError(f"{name}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
    except UnicodeDecodeError as e:
        raise SnapshotError(
            f"{name}: cannot read it ({e.__class__.__name__}); give a readable JSON file"
        ) from None


def read_mapping(path: str) -> dict:
    """A YAML (or JSON) mapping from ``path``."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except FileNotFoundError:
        raise SnapshotError(f"{path}: no such file") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else path
        raise SnapshotError(f"{where}: not valid YAML: {getattr(e, 'problem', e)}") from None
    if not isinstance(data, dict):
        raise SnapshotError(f"{path}: expected a mapping of settings")
    return data
