"""Load ``cluster.yaml`` into a validated :class:`~clusterspec.spec.Cluster`, or raise SpecError with one line each."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from clusterspec.checks import check
from clusterspec.errors import SpecError, field_path
from clusterspec.spec import Cluster

DEFAULT_SPEC = Path(__file__).resolve().parent.parent / "cluster.yaml"


class _UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that rejects a key given twice in one mapping (YAML would keep the last silently)."""


def _mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def parse_yaml(text: str, source: str) -> object:
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        raise SpecError(f"{where}: YAML syntax error: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise SpecError(f"{source}: YAML error: {e}") from None


def _describe(err: dict) -> str:
    kind, msg = err["type"], err["msg"]
    if kind == "missing":
        return "is required but missing"
    if kind == "extra_forbidden":
        return f"unknown field {err['input']!r}" if not isinstance(err["input"], dict) else "unknown field"
    msg = msg.removeprefix("Value error, ")
    shown = err.get("input")
    if isinstance(shown, (dict, list)):
        return msg
    return f"{shown!r}: {msg}"


def spec_from_data(data: object, source: str) -> Cluster:
    if not isinstance(data, dict):
        raise SpecError(f"{source}: expected a mapping at the top level, got {type(data).__name__}")
    try:
        cluster = Cluster.model_validate(data)
    except ValidationError as e:
        lines = []
        for err in e.errors():
            loc = err["loc"]
            if err["type"] == "extra_forbidden":
                lines.append(
                    f"{source}: {field_path(loc)}: unknown field (check the spelling; see docs/spec.md)"
                )
            else:
                lines.append(f"{source}: {field_path(loc)} {_describe(err)}")
        raise SpecError(lines) from None
    problems = check(cluster)
    if problems:
        raise SpecError([f"{source}: {path} {msg}" for path, msg in problems])
    return cluster


def load_spec(path: str | Path | None = None) -> Cluster:
    """The validated spec at ``path`` (default: the repository's ``cluster.yaml``)."""
    p = Path(path) if path else DEFAULT_SPEC
    try:
        text = p.read_text()
    except OSError as e:
        raise SpecError(f"{p}: cannot read the cluster spec: {e.strerror}") from None
    source = p.name if p == DEFAULT_SPEC else str(p)
    return spec_from_data(parse_yaml(text, source), source)
