"""The offline check of Terraform against the AWS provider's schema (``provider_schema.py``) and the AWS APIs'
value rules (``value_rules.py``): what ``terraform validate`` and the first ``apply`` would reject, without a
provider download.

Per directory (a module or a rendered root): unknown resource and data source types, unknown arguments,
computed-only arguments set, missing required arguments and blocks, blocks written as attributes (and the other
way round), more blocks than the schema allows, references to undeclared resources, variables, locals and
modules, to attributes a resource or data source does not have and to outputs a module does not declare,
``ignore_changes`` on arguments that do not exist, module calls with unknown or missing variables, and a
``required_providers`` constraint that does not admit the schema's provider version. Value rules run on every
module once with what its own text knows, and again per module call of a rendered root with the root's
literal arguments bound to the module's variables.

Every problem is one line: ``file:line: address: argument: what is wrong; what would be right``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import hcl2
from hcl2.utils import SerializationOptions

from provision.terraform import value_rules
from provision.terraform.value_rules import Value

_OPTIONS = SerializationOptions(with_comments=False, explicit_blocks=True, strip_string_quotes=False)
_META = {"count", "for_each", "provider", "depends_on", "lifecycle", "provisioner", "connection"}
_MODULE_META = {"source", "version", "count", "for_each", "providers", "depends_on"}
_IDX = r"(?:\[[^\]]*\]|\.\*)?"
_RESOURCE_REF = re.compile(
    rf"(?<![\w.])(data\.)?(aws_[a-z0-9_]+)\.([A-Za-z_][\w-]*){_IDX}(?:\.([A-Za-z_]\w*){_IDX}(?:\.([A-Za-z_]\w*))?)?"
)
_NAMED_REF = re.compile(rf"(?<![\w.])(var|local|module)\.([A-Za-z_][\w-]*)(?:{_IDX}\.([A-Za-z_][\w-]*))?")


@dataclass(frozen=True, order=True)
class Problem:
    path: str
    line: int
    address: str
    argument: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.address}: {self.argument}: {self.message}"


# ---------------------------------------------------------------------------------------------- reading HCL


def _unquote(key: str) -> str:
    return key[1:-1] if len(key) >= 2 and key[0] == key[-1] == '"' else key


def _is_blocks(value: object) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(v, dict) and v.get("__is_block__") for v in value)
    )


def _segments(text: str) -> Iterator[tuple[bool, str]]:
    """``(is_expression, text)`` parts of a template body (without its quotes)."""
    i, literal = 0, []
    while i < len(text):
        if text.startswith(("$${", "%%{"), i):
            literal.append(text[i + 1 : i + 3])
            i += 3
        elif text.startswith(("${", "%{"), i):
            depth, j = 0, i + 1
            while j < len(text):
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                if depth == 0:
                    break
                j += 1
            if literal:
                yield False, "".join(literal)
                literal = []
            yield True, text[i + 2 : j].strip() if text[i] == "$" else "%"
            i = j + 1
        else:
            literal.append(text[i])
            i += 1
    if literal:
        yield False, "".join(literal)


def _body(quoted: str) -> tuple[str, bool]:
    """The template text of a quoted string as python-hcl2 gives it, and whether it is a heredoc (whose
    ``<<EOT`` and closing lines are not part of the value; ``<<-`` also strips the common indentation)."""
    inner = quoted[1:-1]
    if not inner.startswith("<<"):
        return inner, False
    lines = inner.split("\n")[1:-1]
    if quoted[3:4] == "-":
        indent = min((len(ln) - len(ln.lstrip()) for ln in lines if ln.strip()), default=0)
        lines = [ln[indent:] for ln in lines]
    return "\n".join(lines) + "\n", True


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m[1], m[1]), text)


def expressions(value: object) -> Iterator[str]:
    """Every expression text inside a parsed value (keys included)."""
    if isinstance(value, str):
        if value.startswith('"') and value.endswith('"'):
            yield from (t for e, t in _segments(_body(value)[0]) if e)
        else:
            yield value[2:-1] if value.startswith("${") and value.endswith("}") else value
    elif isinstance(value, list):
        for v in value:
            yield from expressions(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            if k != "__is_block__":
                yield from expressions(k)
                yield from expressions(v)


class Locator:
    """Line numbers for ``file:line``: python-hcl2 keeps none, so they are found in the text."""

    def __init__(self, path: Path):
        self.lines = path.read_text().splitlines()

    def header(self, kind: str, *labels: str) -> int:
        pattern = re.compile(r"^\s*" + kind + "".join(rf'\s+"?{re.escape(x)}"?' for x in labels) + r"\s*\{")
        return next((i + 1 for i, ln in enumerate(self.lines) if pattern.match(ln)), 1)

    def argument(self, start: int, names: tuple[str, ...]) -> int:
        line = start
        for name in names:
            pattern = re.compile(rf'^\s*(?:"?{re.escape(name)}"?\s*[={{]|dynamic\s+"{re.escape(name)}")')
            line = next(
                (i + 1 for i in range(line - 1, len(self.lines)) if pattern.match(self.lines[i])), line
            )
        return line

    def text(self, start: int, needle: str) -> int:
        return next((i + 1 for i in range(start - 1, len(self.lines)) if needle in self.lines[i]), start)


@dataclass
class Directory:
    """The declarations of one module or root directory."""

    path: Path
    files: dict[Path, dict] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path, shown: Path) -> Directory:
        d = cls(path)
        for tf in sorted(path.glob("*.tf")):
            try:
                with open(tf) as f:
                    d.files[tf] = hcl2.load(f, serialization_options=_OPTIONS)
            except Exception as exc:  # python-hcl2 raises lark errors of several kinds
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                at = re.search(r"line (\d+)", str(exc))
                line = int(at[1]) if at else 1
                d.problems.append(Problem(_show(tf, shown), line, "-", "-", f"does not parse: {first}"))
        return d

    def items(self, kind: str) -> Iterator[tuple[Path, str, dict]]:
        for tf, parsed in self.files.items():
            for entry in parsed.get(kind, []):
                for name, body in entry.items():
                    if name != "__is_block__":
                        yield tf, _unquote(name), body

    def typed(self, kind: str) -> Iterator[tuple[Path, str, str, dict]]:
        for tf, rtype, named in self.items(kind):
            for name, body in named.items():
                if name != "__is_block__":
                    yield tf, rtype, _unquote(name), body

    def names(self, kind: str) -> set[str]:
        return {name for _, name, _ in self.items(kind)}

    def locals(self) -> dict[str, object]:
        out = {}
        for tf in self.files:
            for block in self.files[tf].get("locals", []):
                out.update({k: v for k, v in block.items() if k != "__is_block__"})
        return out


def _show(path: Path, base: Path) -> str:
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------------------------- the schema


def _suggest(name: str, choices: set[str], shown: int = 25) -> str:
    close = difflib.get_close_matches(name, sorted(choices), n=1, cutoff=0.75)
    if close:
        return f"did you mean {close[0]!r}?"
    names = sorted(choices)
    more = f", ... ({len(names) - shown} more)" if len(names) > shown else ""
    return f"arguments are {', '.join(names[:shown]) or 'none'}{more}"


class _BodyCheck:
    def __init__(self, path: str, locate: Locator, start: int, address: str, out: list[Problem]):
        self.path, self.locate, self.start, self.address, self.out = path, locate, start, address, out

    def problem(self, names: tuple[str, ...], message: str) -> None:
        line = self.locate.argument(self.start, names) if names else self.start
        self.out.append(Problem(self.path, line, self.address, ".".join(names) or "-", message))

    def body(self, body: dict, schema: dict, at: tuple[str, ...], top: bool) -> None:
        args, blocks, computed = schema["args"], schema["blocks"], schema["computed"]
        settable = set(args) | set(blocks)
        present = set()
        counts: dict[str, int] = {}
        for key, value in body.items():
            if key == "__is_block__" or (top and key in _META):
                continue
            if key == "dynamic" and isinstance(value, list):
                for dyn in value:
                    for name, spec in dyn.items():
                        if name == "__is_block__":
                            continue
                        name = _unquote(name)
                        present.add(name)
                        if name not in blocks:
                            what = "an argument" if name in args else "not a block of this type"
                            self.problem(
                                (*at, name), f"dynamic {name!r} is {what}; {_suggest(name, set(blocks))}"
                            )
                            continue
                        for content in spec.get("content", []):
                            self.body(content, blocks[name]["body"], (*at, name), False)
                continue
            present.add(key)
            if key in args:
                if _is_blocks(value):
                    self.problem((*at, key), f"is an argument, not a block: write {key} = ...")
                else:
                    wrong = _wrong_kind(value, schema.get("kinds", {}).get(key))
                    if wrong:
                        self.problem((*at, key), wrong)
            elif key in blocks:
                if not _is_blocks(value):
                    self.problem((*at, key), f"is a block: write {key} {{ ... }}, not {key} = ...")
                    continue
                counts[key] = counts.get(key, 0) + len(value)
                for block in value:
                    self.body(block, blocks[key]["body"], (*at, key), False)
            elif key in computed:
                self.problem((*at, key), "is computed by the provider and cannot be set; remove it")
            else:
                self.problem((*at, key), f"unknown argument; {_suggest(key, settable)}")
        for name, n in counts.items():
            limit = blocks.get(name, {}).get("max")
            if limit and n > limit:
                self.problem((*at, name), f"{n} blocks; the schema allows at most {limit}")
        for name, need in sorted(args.items()):
            if need == "required" and name not in present:
                self.problem(at, f"missing required argument {name!r}")
        for name, spec in sorted(blocks.items()):
            if spec.get("min") and name not in present:
                self.problem(at, f"missing required block {name!r}")


_KIND_NAMES = {"list": "a list", "map": "a map", "object": "an object", None: "a single value"}


def _wrong_kind(value: object, kind: str | None) -> str | None:
    """A literal of the wrong shape: a list where one value goes, a single value where a list or map goes
    (Terraform converts between scalars, and between lists and sets, never between those shapes)."""
    if isinstance(value, list):
        given = "list"
    elif isinstance(value, dict):
        given = "map"
    elif isinstance(value, (bool, int, float)) or (
        isinstance(value, str) and value.startswith('"') and not _body(value)[1]
    ):
        given = None
    else:
        return None  # an expression: its type is not known here
    if given == kind or (given == "map" and kind == "object"):
        return None
    return f"takes {_KIND_NAMES[kind]}, not {_KIND_NAMES[given]}"


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def admits(constraint: str, version: str) -> bool:
    """Whether a Terraform version constraint (``~> 6.25``, ``>= 6.0, < 7.0``) admits ``version``."""
    v = _version_tuple(version)
    for part in constraint.split(","):
        m = re.match(r"\s*(~>|>=|<=|!=|>|<|=)?\s*([0-9.]+)\s*$", part)
        if not m:
            return False
        op, want = m[1] or "=", _version_tuple(m[2])
        padded = want + (0,) * (3 - len(want))
        if op == "~>":
            upper = want[:-1] if len(want) > 1 else want
            if not (v >= padded and v[: len(upper)] == upper):
                return False
        elif not {
            "=": v == padded,
            "!=": v != padded,
            ">": v > padded,
            ">=": v >= padded,
            "<": v < padded,
            "<=": v <= padded,
        }[op]:
            return False
    return True


# ---------------------------------------------------------------------------------------------- values


class Resolver:
    """Known values of ``var.*`` (bound by a root's module call) and ``local.*`` (string templates)."""

    def __init__(self, bindings: dict[str, object], local_values: dict[str, object]):
        self.bindings, self.local_values = bindings, local_values

    def value(self, raw: object, depth: int = 0) -> Value:
        if isinstance(raw, bool):
            return Value("true" if raw else "false", True)
        if isinstance(raw, (int, float)):
            return Value(str(raw), True)
        if not isinstance(raw, str) or depth > 8:
            return Value("", False)
        if raw.startswith('"') and raw.endswith('"'):
            body, heredoc = _body(raw)
            text, complete = [], True
            for is_expr, part in _segments(body):
                if not is_expr:
                    text.append(part if heredoc else _unescape(part))
                    continue
                v = self.expression(part, depth)
                text.append(v.text)
                complete = complete and v.complete
            return Value("".join(text), complete)
        if raw.startswith("${") and raw.endswith("}"):
            return self.expression(raw[2:-1].strip(), depth)
        return Value("", False)

    def expression(self, expr: str, depth: int) -> Value:
        m = re.fullmatch(r"(var|local)\.([A-Za-z_][\w-]*)", expr)
        if not m:
            return Value("", False)
        if m[1] == "var":
            bound = self.bindings.get(m[2])
            return self.value(bound, depth + 1) if bound is not None else Value("", False)
        return self.value(self.local_values.get(m[2]), depth + 1)


def _values_at(body: dict, path: tuple[str, ...]) -> Iterator[object]:
    if len(path) == 1:
        if path[0] in body:
            yield body[path[0]]
        return
    for block in body.get(path[0], []) if _is_blocks(body.get(path[0])) else []:
        yield from _values_at(block, path[1:])
    for dyn in body.get("dynamic", []):
        for name, spec in dyn.items():
            if _unquote(name) == path[0]:
                for content in spec.get("content", []):
                    yield from _values_at(content, path[1:])


def check_values(d: Directory, resolver: Resolver, shown: Path, context: str = "") -> list[Problem]:
    out = []
    suffix = f" [{context}]" if context else ""
    for tf, rtype, name, body in d.typed("resource"):
        locate = Locator(tf)
        start = locate.header("resource", rtype, name)
        address = f"{rtype}.{name}"
        for rule in value_rules.rules_for(rtype):
            for raw in _values_at(body, rule.path):
                v = resolver.value(raw)
                problem = rule.check(v)
                if problem:
                    shown_text = v.text if len(v.text) <= 60 else v.text[:57] + "..."
                    out.append(
                        Problem(
                            _show(tf, shown),
                            locate.argument(start, rule.path),
                            address,
                            ".".join(rule.path),
                            f"{shown_text!r} {problem} ({rule.source}){suffix}",
                        )
                    )
        for key, tags in _tag_maps(body):
            for tag_key, tag_value in tags:
                for problem in value_rules.check_tag(resolver.value(tag_key), resolver.value(tag_value)):
                    out.append(
                        Problem(
                            _show(tf, shown), locate.argument(start, (key,)), address, key, problem + suffix
                        )
                    )
    return out


def _tag_maps(body: dict) -> Iterator[tuple[str, list[tuple[object, object]]]]:
    for key in ("tags", "tags_all"):
        if isinstance(body.get(key), dict):
            yield key, [(k if k.startswith('"') else f'"{k}"', v) for k, v in body[key].items()]
    for block in body.get("tag", []) if _is_blocks(body.get("tag")) else []:
        yield "tag", [(block.get("key"), block.get("value", '""'))]


# ---------------------------------------------------------------------------------------------- the check


class Checker:
    def __init__(self, schema: dict, shown: Path):
        self.schema, self.shown = schema, shown
        self._dirs: dict[Path, Directory] = {}

    def directory(self, path: Path) -> Directory:
        path = path.resolve()
        if path not in self._dirs:
            self._dirs[path] = Directory.load(path, self.shown)
        return self._dirs[path]

    def structure(self, path: Path) -> list[Problem]:
        d = self.directory(path)
        out = list(d.problems)
        declared = {("resource", t, n) for _, t, n, _ in d.typed("resource")}
        declared |= {("data", t, n) for _, t, n, _ in d.typed("data")}
        for kind in ("resource", "data"):
            for tf, rtype, name, body in d.typed(kind):
                out += self._declaration(tf, kind, rtype, name, body)
        out += self._versions(d)
        out += self._modules(d)
        out += self._references(d, declared)
        return out

    def _declaration(self, tf: Path, kind: str, rtype: str, name: str, body: dict) -> list[Problem]:
        if not rtype.startswith("aws_"):
            return []
        out: list[Problem] = []
        locate = Locator(tf)
        start = locate.header(kind, rtype, name)
        address = f"{'data.' if kind == 'data' else ''}{rtype}.{name}"
        schema = self.schema[kind].get(rtype)
        if schema is None:
            other = "resource" if kind == "data" else "data"
            hint = (
                f"it is a {'data source' if other == 'data' else 'resource'} type"
                if rtype in self.schema[other]
                else _suggest(rtype, set(self.schema[kind])).replace("arguments are", "types are")
            )
            what = "data source" if kind == "data" else "resource"
            out.append(
                Problem(
                    _show(tf, self.shown),
                    start,
                    address,
                    "-",
                    f"unknown {what} type in hashicorp/aws {self.schema['provider_version']}; {hint}",
                )
            )
            return out
        _BodyCheck(_show(tf, self.shown), locate, start, address, out).body(body, schema, (), True)
        for lifecycle in body.get("lifecycle", []) if _is_blocks(body.get("lifecycle")) else []:
            ignored = lifecycle.get("ignore_changes", [])
            for item in ignored if isinstance(ignored, list) else []:
                first = re.split(r"[.\[]", _unquote(str(item)).removeprefix("${").removesuffix("}"))[0]
                if first not in schema["args"] and first not in schema["blocks"] and first != "all":
                    out.append(
                        Problem(
                            _show(tf, self.shown),
                            locate.argument(start, ("lifecycle", "ignore_changes")),
                            address,
                            "lifecycle.ignore_changes",
                            f"{first!r} is not an argument of {rtype}; {_suggest(first, set(schema['args']))}",
                        )
                    )
        return out

    def _versions(self, d: Directory) -> list[Problem]:
        out = []
        uses_aws = any(t.startswith("aws_") for kind in ("resource", "data") for _, t, _, _ in d.typed(kind))
        found = False
        for tf, parsed in d.files.items():
            for terraform in parsed.get("terraform", []):
                for providers in terraform.get("required_providers", []):
                    aws = providers.get("aws")
                    if not isinstance(aws, dict):
                        continue
                    found = True
                    constraint = _unquote(str(aws.get("version", "")))
                    want = self.schema["provider_version"]
                    if not admits(constraint, want):
                        major = want.split(".")[0]
                        out.append(
                            Problem(
                                _show(tf, self.shown),
                                Locator(tf).text(1, "version"),
                                "terraform.required_providers",
                                "aws.version",
                                f"{constraint!r} does not admit hashicorp/aws {want}, the schema checked against; "
                                f"use '~> {major}.{want.split('.')[1]}'",
                            )
                        )
        if uses_aws and not found:
            tf = next(iter(d.files), d.path / "versions.tf")
            out.append(
                Problem(
                    _show(tf, self.shown),
                    1,
                    "terraform.required_providers",
                    "aws",
                    "uses the AWS provider without pinning it; add required_providers.aws to versions.tf",
                )
            )
        return out

    def _module_dir(self, d: Directory, body: dict) -> Path | None:
        source = _unquote(str(body.get("source", "")))
        if not source.startswith("."):
            return None
        return (d.path / source).resolve()

    def _modules(self, d: Directory) -> list[Problem]:
        out = []
        for tf, name, body in d.items("module"):
            target = self._module_dir(d, body)
            locate = Locator(tf)
            start = locate.header("module", name)
            if target is None:
                continue
            if not target.is_dir():
                out.append(
                    Problem(
                        _show(tf, self.shown), start, f"module.{name}", "source", f"{target} does not exist"
                    )
                )
                continue
            m = self.directory(target)
            variables = dict((n, b) for _, n, b in m.items("variable"))
            for key in body:
                if key == "__is_block__" or key in _MODULE_META:
                    continue
                if key not in variables:
                    out.append(
                        Problem(
                            _show(tf, self.shown),
                            locate.argument(start, (key,)),
                            f"module.{name}",
                            key,
                            f"the module declares no variable {key!r}; {_suggest(key, set(variables))}",
                        )
                    )
            for var, spec in sorted(variables.items()):
                if "default" not in spec and var not in body:
                    out.append(
                        Problem(
                            _show(tf, self.shown),
                            start,
                            f"module.{name}",
                            var,
                            f"missing: {_show(target, self.shown)} requires variable {var!r} (it has no default)",
                        )
                    )
        return out

    def _references(self, d: Directory, declared: set[tuple[str, str, str]]) -> list[Problem]:
        out = []
        variables, local_names, modules = (
            d.names("variable"),
            set(d.locals()),
            dict((n, b) for _, n, b in d.items("module")),
        )
        seen = set()
        for tf, parsed in d.files.items():
            locate = Locator(tf)
            for expr in expressions(parsed):
                for m in _RESOURCE_REF.finditer(expr):
                    kind = "data" if m[1] else "resource"
                    problem = self._resource_ref(kind, m[2], m[3], m[4], m[5], declared)
                    if problem and (tf, m[0], problem) not in seen:
                        seen.add((tf, m[0], problem))
                        out.append(
                            Problem(
                                _show(tf, self.shown), locate.text(1, m[0].split("[")[0]), m[0], "-", problem
                            )
                        )
                for m in _NAMED_REF.finditer(expr):
                    problem = None
                    if m[1] == "var" and m[2] not in variables:
                        problem = f"no variable {m[2]!r} is declared here; {_suggest(m[2], variables)}"
                    elif m[1] == "local" and m[2] not in local_names:
                        problem = f"no local {m[2]!r} is declared here; {_suggest(m[2], local_names)}"
                    elif m[1] == "module":
                        if m[2] not in modules:
                            problem = f"no module {m[2]!r} is called here"
                        elif m[3]:
                            target = self._module_dir(d, modules[m[2]])
                            if target and target.is_dir():
                                outputs = self.directory(target).names("output")
                                if m[3] not in outputs:
                                    problem = (
                                        f"{_show(target, self.shown)} has no output {m[3]!r}; "
                                        f"{_suggest(m[3], outputs).replace('arguments are', 'outputs are')}"
                                    )
                    if problem and (tf, m[0], problem) not in seen:
                        seen.add((tf, m[0], problem))
                        out.append(Problem(_show(tf, self.shown), locate.text(1, m[0]), m[0], "-", problem))
        return out

    def _resource_ref(
        self, kind: str, rtype: str, name: str, attr: str | None, sub: str | None, declared: set
    ) -> str | None:
        what = "data source" if kind == "data" else "resource"
        if (kind, rtype, name) not in declared:
            return f"reference to an undeclared {what}; declare {'data.' if kind == 'data' else ''}{rtype}.{name}"
        schema = self.schema[kind].get(rtype)
        if schema is None or attr is None:
            return None
        readable = set(schema["args"]) | set(schema["blocks"]) | set(schema["computed"]) | {"id"}
        if attr not in readable:
            return f"{rtype} has no attribute {attr!r}; {_suggest(attr, readable).replace('arguments', 'attributes')}"
        if sub is None:
            return None
        if attr in schema["blocks"]:
            inner = schema["blocks"][attr]["body"]
            names = set(inner["args"]) | set(inner["blocks"]) | set(inner["computed"])
        elif isinstance(schema["computed"].get(attr), dict):
            names = set(schema["computed"][attr]["computed"])
        else:
            return None
        if sub not in names:
            return f"{rtype}.{attr} has no attribute {sub!r}; {_suggest(sub, names).replace('arguments', 'attributes')}"
        return None

    # ------------------------------------------------------------------------------------------ values

    def values(
        self, path: Path, bindings: dict[str, object] | None, context: str, depth: int = 0
    ) -> list[Problem]:
        d = self.directory(path)
        defaults = {n: b.get("default") for _, n, b in d.items("variable") if "default" in b}
        resolver = Resolver({**defaults, **(bindings or {})} if bindings is not None else {}, d.locals())
        out = check_values(d, resolver, self.shown, context)
        if depth > 4:
            return out
        for _, name, body in d.items("module"):
            target = self._module_dir(d, body)
            if target is None or not target.is_dir():
                continue
            inner = {
                k: _literal(resolver, v)
                for k, v in body.items()
                if k not in _MODULE_META and k != "__is_block__"
            }
            inner = {k: v for k, v in inner.items() if v is not None}
            out += self.values(target, inner, f"{context} module.{name}".strip(), depth + 1)
        return out


def _literal(resolver: Resolver, raw: object) -> object | None:
    """A module argument as a literal the callee can use: known strings and numbers (lists and maps pass
    through when they hold only literals)."""
    if isinstance(raw, (bool, int, float)):
        return raw
    if isinstance(raw, str):
        v = resolver.value(raw)
        return '"' + v.text.replace("\\", "\\\\").replace('"', '\\"') + '"' if v.complete else None
    return None


def check_apply_rules(d: Directory, shown: Path, known_policies: set[str] | None = None) -> list[Problem]:
    """apply_rules.py: managed-policy ARNs that do not exist; `resolve:ssm:` images with a root block device."""
    from provision.terraform import apply_rules

    known = apply_rules.table() if known_policies is None else known_policies
    found = [
        *apply_rules.check_policies(d.typed("resource"), known),
        *apply_rules.check_resolve_ssm(d.typed("resource"), d.locals()),
    ]
    out = []
    for address, argument, message in found:
        rtype, name = address.split(".", 1)
        tf = next((tf for tf, t, n, _ in d.typed("resource") if (t, n) == (rtype, name)), None)
        if tf is None:
            continue
        locate = Locator(tf)
        line = locate.argument(locate.header("resource", rtype, name), (argument,))
        out.append(Problem(_show(tf, shown), line, address, argument, message))
    return out


def check(schema: dict, modules: Path, roots: list[Path], shown: Path) -> list[Problem]:
    """Every module under ``modules`` and every rendered root in ``roots``; problems sorted, duplicates dropped."""
    checker = Checker(schema, shown)
    problems: set[Problem] = set()
    for module in sorted(p for p in modules.iterdir() if p.is_dir() and list(p.glob("*.tf"))):
        problems.update(checker.structure(module))
        problems.update(checker.values(module, None, ""))
        problems.update(check_apply_rules(checker.directory(module), shown))
    # A value a module gets wrong whatever its caller passes is reported once, without a root's context.
    known = {(p.path, p.line, p.address, p.argument) for p in problems}
    for root in roots:
        problems.update(checker.structure(root))
        problems.update(check_apply_rules(checker.directory(root), shown))
        for p in checker.values(root, {}, root.name):
            if (p.path, p.line, p.address, p.argument) not in known:
                problems.add(p)
    return sorted(problems)


def run(cluster, out: Path, modules: Path, schema_path: Path, repo: Path) -> list[Problem]:
    """``invoke check-terraform``: render every root of the spec into ``out``, check them and every module,
    print one line per problem and a summary; the problems are returned (the task exits 2 when any)."""
    from clusterspec.errors import UserError
    from provision.terraform import provider_schema
    from provision.terraform.render import render

    if not schema_path.is_file():
        raise UserError(f"{schema_path}: the AWS provider schema is missing; run `make tools` (needs npm)")
    try:
        schema = provider_schema.load(schema_path)
    except (OSError, ValueError) as exc:
        raise UserError(f"{schema_path}: {exc}; run `make tools`") from None
    from provision.terraform import seams

    roots = [r.path for r in render(cluster, out_dir=out)]
    problems = check(schema, modules, roots, repo)
    crossing, counts = seams.check(Checker(schema, repo), modules, roots, repo)
    for p in problems + crossing:
        print(p)
    print(
        f"{len(problems)} problems in {len(list(modules.iterdir()))} modules and {len(roots)} rendered roots "
        f"(hashicorp/aws {schema['provider_version']} from {schema['package']})"
    )
    print(f"{len(crossing)} cross-resource problems; checked: {counts.line()}")
    return problems + crossing
