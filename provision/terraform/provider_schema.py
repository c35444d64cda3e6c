"""The AWS provider's schema, extracted from the prebuilt CDK for Terraform bindings (``@cdktf/provider-aws``
on npm) into a compact JSON file that the offline check (``schema_check.py``) reads.

The bindings are generated from ``terraform providers schema -json`` of one provider release (21.22.1 binds
hashicorp/aws 6.25.0). Two parts of the package carry what we need:

- ``package/.jsii`` (the jsii assembly): every configuration struct with each property's optionality, which is
  the provider's ``required`` flag for attributes and ``min_items > 0`` for blocks;
- ``package/lib/<resource>/index.js`` (the generated code): the Terraform names, whether each argument is a
  block or an attribute and its nesting (``struct`` = at most one block, ``list``/``set`` = repeated), and the
  getters of every attribute a reference may read (computed-only ones included), and whether an attribute
  takes a single value, a list (or set), a map or an object.

Standard library only: ``make tools`` runs it before any virtual environment exists.
Usage: ``python3 provision/terraform/provider_schema.py PACKAGE.tgz OUT.json``.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
import tarfile
from pathlib import Path

PACKAGE = "@cdktf/provider-aws"
PACKAGE_VERSION = "21.22.1"
SCHEMA_FORMAT = 2

_CLASS = re.compile(r"^class (\w+) extends cdktf\.(\w+) \{$", re.M)
_FUNCTION = re.compile(r"^function (\w+)ToHclTerraform\(struct\) \{$", re.M)
_ATTR = re.compile(
    r"^ +(\w+): \{\n +value: ([^\n]*),\n +isBlock: (true|false),\n +type: \"(\w+)\",\n"
    r" +storageClassType: \"(\w+)\",$",
    re.M,
)
_NESTED_FN = re.compile(r"(?<!cdktf\.)\b([a-z]\w*)ToHclTerraform\b")
_CAMEL = re.compile(r"(?:struct\.|this\._)(\w+)")
_GETTER = re.compile(r"get\w*Attribute\('(\w+)'\)|interpolationForAttribute\('(\w+)'\)")
_COMPLEX = re.compile(r"this\._\w+ = new (\w+)\(this, \"(\w+)\"")
_TF_TYPE = re.compile(r"^(\w+)\.tfResourceType = \"(\w+)\";$", re.M)
_DOC_VERSION = re.compile(r"registry\.terraform\.io/providers/hashicorp/aws/([0-9.]+)/docs")
_META = {"count", "for_each", "provider", "depends_on", "lifecycle", "provisioner", "connection"}


def _chunks(text: str) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """Function bodies by struct name and class bodies (with their base) by class name."""
    starts = sorted(
        [(m.start(), "fn", m[1], "") for m in _FUNCTION.finditer(text)]
        + [(m.start(), "class", m[1], m[2]) for m in _CLASS.finditer(text)]
    )
    functions, classes = {}, {}
    for i, (start, kind, name, base) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        if kind == "fn":
            functions[name] = text[start:end]
        else:
            classes[name] = (text[start:end], base)
    return functions, classes


def _attrs(body: str) -> list[dict]:
    out = []
    for m in _ATTR.finditer(body):
        value = m[2]
        nested = _NESTED_FN.search(value)
        camel = _CAMEL.search(value)
        out.append(
            {
                "name": m[1],
                "camel": camel[1] if camel else None,
                "block": m[3] == "true",
                "type": m[4],
                "nested": nested[1] if nested else None,
            }
        )
    return out


def _readable(class_body: str) -> dict[str, str | None]:
    """Names a reference may read through this class: plain getters and complex attributes (name -> class)."""
    names: dict[str, str | None] = {}
    for m in _GETTER.finditer(class_body):
        names.setdefault(m[1] or m[2], None)
    for m in _COMPLEX.finditer(class_body):
        names[m[2]] = m[1]
    return names


class _Module:
    """One generated file (``lib/<dir>/index.js``) with the optionality of its structs from the assembly."""

    def __init__(self, text: str, optional: dict[str, dict[str, tuple[bool, bool]]]):
        self.functions, self.classes = _chunks(text)
        self.optional = optional

    def _reference_class(self, name: str | None) -> str | None:
        """The OutputReference class behind a List/Map/OutputReference class name."""
        if not name:
            return None
        for suffix in ("List", "Map"):
            if name.endswith(suffix) and name[: -len(suffix)] + "OutputReference" in self.classes:
                return name[: -len(suffix)] + "OutputReference"
        return name if name in self.classes else None

    def _read_only(self, ref_class: str | None, depth: int = 0) -> dict:
        """A computed-only nested attribute: the names it offers to references."""
        if not ref_class or depth > 6:
            return {}
        readable = _readable(self.classes[ref_class][0])
        return {
            "computed": {
                n: self._read_only(self._reference_class(c), depth + 1) or None for n, c in readable.items()
            }
        }

    def body(self, attrs: list[dict], struct: str, ref_class: str | None, depth: int = 0) -> dict:
        optional = self.optional.get(struct, {})
        args, blocks, kinds = {}, {}, {}
        for a in attrs:
            is_optional, single = optional.get(a["camel"] or "", (True, False))
            required = a["camel"] is not None and not is_optional
            if a["block"]:
                sub = a["nested"]
                sub_struct = sub[0].upper() + sub[1:] if sub else ""
                sub_attrs = _attrs(self.functions.get(sub, "")) if sub else []
                sub_ref = (
                    sub_struct + "OutputReference" if sub_struct + "OutputReference" in self.classes else None
                )
                blocks[a["name"]] = {
                    "nesting": {"struct": "single"}.get(a["type"], a["type"]),
                    "min": 1 if required else 0,
                    "max": 1 if single or a["type"] == "struct" else None,
                    "body": self.body(sub_attrs, sub_struct, sub_ref, depth + 1) if depth < 8 else {},
                }
            else:
                args[a["name"]] = "required" if required else "optional"
                if a["type"] != "simple":  # lists, sets, maps and objects; scalars are left out (compact)
                    kinds[a["name"]] = {"list": "list", "set": "list", "map": "map"}.get(a["type"], "object")
        computed = {}
        if ref_class:
            for name, cls in _readable(self.classes[ref_class][0]).items():
                if name not in args and name not in blocks:
                    computed[name] = self._read_only(self._reference_class(cls)) or None
        return {"args": args, "kinds": kinds, "blocks": blocks, "computed": computed}

    def roots(self) -> list[tuple[str, str, dict]]:
        """``(kind, terraform type, body)`` for the resource or data source of this file."""
        found = []
        for cls, tf_type in _TF_TYPE.findall("\n".join(b for b, _ in self.classes.values())):
            if cls not in self.classes:
                continue
            body, base = self.classes[cls]
            if base not in ("TerraformResource", "TerraformDataSource"):
                continue
            synth = body[body.find("synthesizeHclAttributes()") :]
            schema = self.body(_attrs(synth), cls + "Config", cls)
            found.append(("data" if base == "TerraformDataSource" else "resource", tf_type, schema))
        return found


def _optionality(jsii: dict) -> tuple[dict[str, dict[str, dict[str, bool]]], str]:
    """``{lib dir: {struct name: {camelCase property: (optional, single)}}}`` and the bound provider version."""
    out: dict[str, dict[str, dict[str, tuple[bool, bool]]]] = {}
    versions = set()
    for t in jsii["types"].values():
        if t.get("kind") != "interface" or not t.get("datatype"):
            continue
        filename = t.get("locationInModule", {}).get("filename", "")
        parts = filename.split("/")
        if len(parts) != 3 or parts[0] != "src":
            continue
        # (optional, one struct rather than a collection: the provider's max_items = 1)
        props = {p["name"]: (bool(p.get("optional")), "fqn" in p["type"]) for p in t.get("properties", [])}
        out.setdefault(parts[1], {})[t["name"]] = props
        for p in t.get("properties", [])[:1]:
            m = _DOC_VERSION.search(p.get("docs", {}).get("summary", ""))
            if m:
                versions.add(m[1])
    if len(versions) != 1:
        raise SystemExit(f"expected one provider version in the assembly, found {sorted(versions)}")
    return out, versions.pop()


def extract(tgz: Path) -> dict:
    """One streaming pass over the package (the assembly comes first; seeking back in a .tgz is slow)."""
    schema: dict = {"format": SCHEMA_FORMAT, "provider": "hashicorp/aws", "resource": {}, "data": {}}
    optional: dict = {}
    with tarfile.open(tgz, "r|gz") as tar:
        for member in tar:
            parts = member.name.split("/")
            if member.name == "package/.jsii":
                jsii = json.load(tar.extractfile(member))
                optional, schema["provider_version"] = _optionality(jsii)
                schema["package"] = f"{jsii['name']}@{jsii['version']}"
                del jsii
            elif len(parts) == 4 and parts[1] == "lib" and parts[3] == "index.js":
                if not optional:
                    raise SystemExit(f"{tgz}: package/.jsii does not come first; not the npm package?")
                text = tar.extractfile(member).read().decode()
                for kind, tf_type, body in _Module(text, optional.get(parts[2], {})).roots():
                    schema[kind][tf_type] = body
    if not schema["resource"].get("aws_security_group") or not schema["data"].get("aws_iam_policy_document"):
        raise SystemExit(
            f"{tgz}: no aws_security_group or aws_iam_policy_document found; not the AWS bindings?"
        )
    return schema


def _kind(tf_type: object) -> str | None:
    """A Terraform type (``terraform providers schema -json``) as the check's kind: None for a scalar."""
    if isinstance(tf_type, list):
        return {"list": "list", "set": "list", "map": "map"}.get(tf_type[0], "object")
    return None


def _read_only(tf_type: object) -> dict | None:
    """The names a reference may read inside a computed object (or list or set of objects)."""
    while isinstance(tf_type, list) and tf_type[0] in ("list", "set", "map"):
        tf_type = tf_type[1]
    if isinstance(tf_type, list) and tf_type[0] == "object":
        return {
            "args": {},
            "kinds": {},
            "blocks": {},
            "computed": {n: _read_only(t) for n, t in tf_type[1].items()},
        }
    return None


def _block(block: dict) -> dict:
    args, kinds, computed, blocks = {}, {}, {}, {}
    for name, a in block.get("attributes", {}).items():
        if a.get("required") or a.get("optional"):
            args[name] = "required" if a.get("required") else "optional"
            kind = _kind(a.get("type")) if "type" in a else "object"
            if kind:
                kinds[name] = kind
        else:
            computed[name] = _read_only(a.get("type"))
    for name, b in block.get("block_types", {}).items():
        mode = b.get("nesting_mode", "list")
        blocks[name] = {
            "nesting": "single" if mode in ("single", "group") else mode,
            "min": int(b.get("min_items", 0) or 0),
            "max": 1 if mode in ("single", "group") or b.get("max_items") == 1 else None,
            "body": _block(b.get("block", {})),
        }
    return {"args": args, "kinds": kinds, "blocks": blocks, "computed": computed}


def from_terraform(full: dict, version: str) -> dict:
    """The check's schema from ``terraform providers schema -json`` of the provider the roots use (the mirror's
    hashicorp/aws): the same format as the one extracted from the npm bindings."""
    provider = next(v for k, v in full["provider_schemas"].items() if k.endswith("hashicorp/aws"))
    return {
        "format": SCHEMA_FORMAT,
        "package": f"terraform providers schema -json (hashicorp/aws {version})",
        "provider_version": version,
        "resource": {t: _block(s["block"]) for t, s in provider.get("resource_schemas", {}).items()},
        "data": {t: _block(s["block"]) for t, s in provider.get("data_source_schemas", {}).items()},
    }


def write(schema: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    with gzip.open(tmp, "wt") as f:
        json.dump(schema, f, separators=(",", ":"), sort_keys=True)
    tmp.replace(out)


def load(path: Path) -> dict:
    with gzip.open(path, "rt") as f:
        schema = json.load(f)
    if schema.get("format") != SCHEMA_FORMAT:
        raise ValueError(
            f"{path}: schema format {schema.get('format')}, expected {SCHEMA_FORMAT}; run `make tools`"
        )
    return schema


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: provider_schema.py PACKAGE.tgz OUT.json.gz", file=sys.stderr)
        return 2
    schema = extract(Path(argv[0]))
    write(schema, Path(argv[1]))
    print(
        f"{argv[1]}: {schema['package']} (hashicorp/aws {schema['provider_version']}): "
        f"{len(schema['resource'])} resources, {len(schema['data'])} data sources"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
