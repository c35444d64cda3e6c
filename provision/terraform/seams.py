"""Cross-resource rules of `invoke check-terraform`: what fails between resources, modules and parts, where the
provider schema and the per-argument value rules see nothing (each rule cites the AWS document it follows).

- ``root_volumes``: an instance or launch template booting the baked image gives its root volume at least the
  image's root snapshot (clusterspec/names.py ``IMAGE_ROOT_GIB``, the size Packer bakes; one source).
- ``log_group_keys``: a KMS-encrypted log group's name is inside its key policy's ``aws:logs:arn`` condition.
- ``lambda_concurrency``: no Lambda function reserves concurrency (new accounts cannot).
- ``ports``: every port a component uses is open between exactly the parties that use it
  (provision/terraform/ports.py).
- ``api_calls``: every AWS API call a script, user data or Lambda makes is allowed by the role that runs it
  (provision/terraform/iam_eval.py over the rendered policies, provision/terraform/data/api_calls.yaml).

They run over the scopes of a rendered root (the root and every module it calls, with the root's literal
arguments bound to the modules' variables), as the value rules do; a module is checked alone for what needs no
caller (Lambda concurrency, ports).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from clusterspec.names import IMAGE_ROOT_GIB
from provision.terraform import ports as ports_table
from provision.terraform.schema_check import (
    _MODULE_META,
    Checker,
    Directory,
    Locator,
    Problem,
    Resolver,
    _is_blocks,
    _literal,
    _show,
    _unquote,
)

RUN_INSTANCES = (
    "EC2 API RunInstances, EbsBlockDevice.VolumeSize: the size must be equal to or larger than the snapshot's"
)
LOGS_KMS = (
    'Amazon CloudWatch Logs User Guide, "Encrypt log data in CloudWatch Logs using AWS KMS": the key policy must '
    "allow logs.<region>.amazonaws.com with kms:EncryptionContext:aws:logs:arn matching the log group, or "
    "CreateLogGroup/AssociateKmsKey is refused"
)
LAMBDA_CONCURRENCY = (
    'AWS Lambda Developer Guide, "Configuring reserved concurrency": Lambda keeps at least 100 unreserved '
    "concurrent executions, and a new account's concurrency quota may be 10, so PutFunctionConcurrency fails"
)
# Arguments that name the baked GPU image (Terraform modules pass it as ami_id or resolve its SSM parameter).
BAKED_IMAGE = re.compile(
    r"\bami_id\b|ami_ssm_parameter|data\.aws_ssm_parameter\.ami|local\.image_id|local\.ami_id"
)


@dataclass
class Scope:
    d: Directory
    resolver: Resolver
    context: str  # "module.a module.b" below the root; "" for the root or a module checked alone
    bound: bool  # variables bound by a rendered root (False: a module checked alone)


def scopes(
    checker: Checker, path: Path, bindings: dict | None, context: str = "", depth: int = 0
) -> Iterator[Scope]:
    d = checker.directory(path)
    defaults = {n: b.get("default") for _, n, b in d.items("variable") if "default" in b}
    resolver = Resolver({**defaults, **(bindings or {})} if bindings is not None else {}, d.locals())
    yield Scope(d, resolver, context, bindings is not None)
    if depth > 4:
        return
    for _, name, body in d.items("module"):
        target = checker._module_dir(d, body)
        if target is None or not target.is_dir():
            continue
        inner = {
            k: _bound(resolver, v) for k, v in body.items() if k not in _MODULE_META and k != "__is_block__"
        }
        inner = {k: v for k, v in inner.items() if v is not None}
        yield from scopes(checker, target, inner, f"{context} module.{name}".strip(), depth + 1)


def _bound(resolver: Resolver, raw: object) -> object | None:
    """A module argument the callee's rules can use: a literal, or a list of literals (a list of names that an
    IAM condition lists, e.g. the sites' gateways)."""
    if isinstance(raw, list):
        items = [_literal(resolver, x) for x in raw]
        return items if all(isinstance(x, str) for x in items) else None
    return _literal(resolver, raw)


def _number(scope: Scope, raw: object) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)):
        return int(raw)
    v = scope.resolver.value(raw)
    text = v.text.strip('"')
    return int(text) if v.complete and text.isdigit() else None


def _problem(scope: Scope, tf: Path, shown: Path, start: int, names: tuple[str, ...], address: str, msg: str):
    suffix = f" [{scope.context}]" if scope.context else ""
    return Problem(
        _show(tf, shown), Locator(tf).argument(start, names), address, ".".join(names), msg + suffix
    )


# --- rule 1: root volume >= the baked image's snapshot ------------------------------------------------------------
def root_volumes(scope: Scope, shown: Path, image_gib: int = IMAGE_ROOT_GIB) -> list[Problem]:
    out = []
    for tf, rtype, name, body in scope.d.typed("resource"):
        if rtype == "aws_instance":
            image, path = body.get("ami"), ("root_block_device", "volume_size")
            sizes = [b.get("volume_size") for b in body.get("root_block_device") or [] if isinstance(b, dict)]
        elif rtype == "aws_launch_template":
            image, path = body.get("image_id"), ("block_device_mappings", "ebs", "volume_size")
            sizes = [
                e.get("volume_size")
                for m in body.get("block_device_mappings") or []
                if isinstance(m, dict)
                and _unquote(str(m.get("device_name", ""))).strip('"') in ("/dev/sda1", "/dev/xvda")
                for e in m.get("ebs") or []
            ]
        else:
            continue
        if not isinstance(image, str) or not BAKED_IMAGE.search(image):
            continue
        for raw in sizes:
            size = _number(scope, raw)
            if size is not None and size < image_gib:
                start = Locator(tf).header("resource", rtype, name)
                out.append(_problem(scope, tf, shown, start, path, f"{rtype}.{name}",
                                    f"{size} GiB is smaller than the baked image's {image_gib} GiB root snapshot "
                                    f"(clusterspec/names.py IMAGE_ROOT_GIB); use at least {image_gib} "
                                    f"({RUN_INSTANCES})"))  # fmt: skip
    return out


# --- rule 2: a KMS-encrypted log group's name is inside the key policy's aws:logs:arn condition -------------------
def _log_patterns(all_scopes: list[Scope]) -> list[str]:
    """The log-group parts (after ``log-group:``) of every aws:logs:arn condition in the root's key policies."""
    out = []
    for s in all_scopes:
        for _tf, rtype, _name, body in s.d.typed("data"):
            if rtype != "aws_iam_policy_document":
                continue
            for stmt in body.get("statement") or []:
                for cond in stmt.get("condition") or []:
                    variable = s.resolver.value(cond.get("variable")).text
                    if not variable.endswith("aws:logs:arn"):
                        continue
                    for raw in cond.get("values") or []:
                        v = s.resolver.value(raw)
                        if v.complete or "log-group:" in v.text:
                            out.append(v.text.split("log-group:", 1)[-1])
    return out


def log_group_keys(all_scopes: list[Scope], shown: Path) -> list[Problem]:
    patterns = _log_patterns(all_scopes)
    out = []
    for s in all_scopes:
        for tf, rtype, name, body in s.d.typed("resource"):
            if rtype != "aws_cloudwatch_log_group" or "kms_key_id" not in body:
                continue
            group = s.resolver.value(body.get("name"))
            if not group.complete:
                continue
            if not any(fnmatch.fnmatchcase(group.text, p) for p in patterns):
                start = Locator(tf).header("resource", rtype, name)
                shown_patterns = ", ".join(sorted(set(patterns))) or "none"
                out.append(_problem(s, tf, shown, start, ("name",), f"{rtype}.{name}",
                                    f"{group.text!r} is encrypted with a key whose policy admits CloudWatch Logs "
                                    f"only for log groups {shown_patterns}; name it inside them or widen the "
                                    f"condition ({LOGS_KMS})"))  # fmt: skip
    return out


# --- rule 3: no reserved Lambda concurrency -------------------------------------------------------------------
def lambda_concurrency(scope: Scope, shown: Path) -> list[Problem]:
    out = []
    for tf, rtype, name, body in scope.d.typed("resource"):
        if rtype != "aws_lambda_function" or "reserved_concurrent_executions" not in body:
            continue
        n = _number(scope, body["reserved_concurrent_executions"])
        if n == -1:
            continue
        start = Locator(tf).header("resource", rtype, name)
        out.append(_problem(scope, tf, shown, start, ("reserved_concurrent_executions",), f"{rtype}.{name}",
                            f"reserves {n if n is not None else 'some'} concurrent executions; leave it unset "
                            f"(`invoke preflight` reports the account's Lambda quota) ({LAMBDA_CONCURRENCY})"))  # fmt: skip
    return out


# --- rule 4: ports between exactly the parties that use them -------------------------------------------------
def _blocks(body: dict, key: str) -> list[dict]:
    v = body.get(key)
    return [b for b in v if isinstance(b, dict)] if _is_blocks(v) else []


def ingress_rules(scope: Scope) -> Iterator[tuple[Path, str, str, ports_table.Opening]]:
    """(file, resource name, expression, the opening) of every ingress rule the directory declares, for_each over a
    local map of [protocol, from, to] expanded."""
    module = scope.d.path.name
    local_values = scope.d.locals()
    for tf, rtype, name, body in scope.d.typed("resource"):
        if rtype != "aws_vpc_security_group_ingress_rule":
            continue
        group = ports_table.party(module, str(body.get("security_group_id", "")))
        source = ports_table.source(module, body)
        each = str(body.get("for_each", ""))
        m = re.fullmatch(r'"?\$\{local\.(\w+)\}"?', each)
        entries = local_values.get(m[1]) if m else None
        if isinstance(entries, dict) and all(isinstance(v, list) and len(v) == 3 for v in entries.values()):
            for key, (proto, lo, hi) in entries.items():
                yield (
                    tf,
                    name,
                    key,
                    ports_table.Opening(
                        module, group, source, _unquote(str(proto)).strip('"'), int(lo), int(hi)
                    ),
                )
            continue
        proto = _unquote(str(body.get("ip_protocol", ""))).strip('"')
        lo, hi = body.get("from_port", -1), body.get("to_port", -1)
        yield tf, name, "", ports_table.Opening(module, group, source, proto, int(lo) if isinstance(lo, int) else -1,
                                                int(hi) if isinstance(hi, int) else -1)  # fmt: skip


def ports(scope: Scope, shown: Path, table: list[ports_table.Port] | None = None) -> list[Problem]:
    table = ports_table.PORTS if table is None else table
    module = scope.d.path.name
    expected = {p.opening: p for p in table if p.opening.module == module}
    if not expected and not any(
        r == "aws_vpc_security_group_ingress_rule" for _, r, _, _ in scope.d.typed("resource")
    ):
        return []
    out = []
    seen = set()
    for tf, name, key, opening in ingress_rules(scope):
        seen.add(opening)
        if opening in expected:
            continue
        start = Locator(tf).header("resource", "aws_vpc_security_group_ingress_rule", name)
        users = [
            p
            for p in table
            if (p.opening.proto, p.opening.lo, p.opening.hi) == (opening.proto, opening.lo, opening.hi)
        ]
        why = "; ".join(f"{p.component} is used from {p.opening.source} ({p.cite})" for p in users) or \
            "no component of the cluster uses it (provision/terraform/ports.py)"  # fmt: skip
        line = next((i + 1 for i, ln in enumerate(Locator(tf).lines) if re.match(rf"\s*{re.escape(key)}\s*=", ln)),
                    start) if key else start  # fmt: skip
        out.append(Problem(_show(tf, shown), line,
                           f"aws_vpc_security_group_ingress_rule.{name}{f'[{key}]' if key else ''}", "ingress",
                           f"{opening.describe()}: opens more than the parties that use it: {why}"))  # fmt: skip
    for opening, port in expected.items():
        if opening not in seen:
            tf = next(iter(scope.d.files), scope.d.path / "main.tf")
            out.append(Problem(_show(tf, shown), 1, f"module {module}", "ingress",
                               f"{port.component} needs {opening.describe()} ({port.cite}); no rule opens it"))  # fmt: skip
    return out


# --- rule 5: the nodes' own ports are not reachable from machines with shells ------------------------------------
def egress_rules(scope: Scope) -> Iterator[tuple[Path, str, str, str, int, int]]:
    """(file, resource name, key, protocol, from, to) of every egress rule: a literal rule, or one whose for_each
    draws [protocol, from, to, ...] entries from a local map (directly or through a for expression over it)."""
    local_values = scope.d.locals()
    for tf, rtype, name, body in scope.d.typed("resource"):
        if rtype != "aws_vpc_security_group_egress_rule":
            continue
        each = str(body.get("for_each", ""))
        group = ports_table.party(scope.d.path.name, str(body.get("security_group_id", "")))
        names = re.findall(r"local\.(\w+)", each)
        for n in list(names):  # a for expression over another local (setproduct of ports and networks)
            if isinstance(local_values.get(n), str):
                names += re.findall(r"local\.(\w+)", local_values[n])
        maps = [local_values.get(m) for m in names]
        for entries in [m for m in maps if isinstance(m, dict)]:
            if isinstance(m2 := next(iter(entries.values()), None), list) and len(m2) >= 3 and \
                    all(isinstance(v, list) and len(v) >= 3 for v in entries.values()):  # fmt: skip
                for key, (proto, lo, hi, *_rest) in entries.items():
                    yield tf, group, name, key, _unquote(str(proto)).strip('"'), int(lo), int(hi)
                break
        else:
            proto = _unquote(str(body.get("ip_protocol", ""))).strip('"')
            lo, hi = body.get("from_port", -1), body.get("to_port", -1)
            yield (tf, group, name, "", proto, int(lo) if isinstance(lo, int) else -1,
                   int(hi) if isinstance(hi, int) else -1)  # fmt: skip


def nodes_only(scope: Scope, shown: Path, table: list[ports_table.Port] | None = None) -> list[Problem]:
    table = ports_table.NODES_ONLY if table is None else table
    module = scope.d.path.name
    out = []
    for tf, group, name, key, proto, lo, hi in egress_rules(scope):
        if (module, group) not in ports_table.SHELL_GROUPS:
            continue
        for port in table:
            o = port.opening
            if proto == "-1" or (proto == o.proto and lo <= o.lo and o.hi <= hi):
                start = Locator(tf).header("resource", "aws_vpc_security_group_egress_rule", name)
                line = next((i + 1 for i, ln in enumerate(Locator(tf).lines) if key and re.match(rf"\s*{re.escape(key)}\s*=", ln)),
                            start)  # fmt: skip
                out.append(Problem(_show(tf, shown), line,
                                   f"aws_vpc_security_group_egress_rule.{name}{f'[{key}]' if key else ''}", "egress",
                                   f"{module}.{group} (researchers' shells) reaches {o.proto} {o.lo}, {port.component}, "
                                   f"which only the cluster's nodes may reach ({port.cite}); leave it out of the "
                                   "group's egress"))  # fmt: skip
    return out


# --- rule 6: on machines with shells, only root reaches the instance metadata -----------------------------------
IMDS = (
    'Amazon EC2 User Guide, "Limit access to the instance metadata service": a local firewall rule (iptables or '
    "nftables owner match) keeps users other than root from the role's credentials; the hop limit only keeps "
    "containers out"
)
IMDS_ROOT_ONLY = [
    re.compile(r"ip daddr 169\.254\.169\.254 meta skuid != 0 (reject|drop)"),
    re.compile(r"-d 169\.254\.169\.254\b.*-m owner ! --uid-owner (0|root)\b.*-j (REJECT|DROP)"),
]


def imds_root_only(scope: Scope, shown: Path) -> list[Problem]:
    """Every instance of a module with shell users (ports.SHELL_GROUPS) runs user data (a templatefile of the
    module) with a rule that keeps non-root users from 169.254.169.254."""
    module = scope.d.path.name
    if module not in {m for m, _ in ports_table.SHELL_GROUPS}:
        return []
    out = []
    for tf, rtype, name, _body in scope.d.typed("resource"):
        if rtype not in ("aws_instance", "aws_launch_template"):
            continue
        text = "\n".join(f.read_text() for f in scope.d.files)
        templates = [
            scope.d.path / t for t in re.findall(r'templatefile\("\$\{path\.module\}/([^"]+)"', text)
        ]
        user_data = "\n".join(t.read_text() for t in templates if t.is_file())
        if any(r.search(user_data) for r in IMDS_ROOT_ONLY):
            continue
        start = Locator(tf).header("resource", rtype, name)
        out.append(Problem(_show(tf, shown), start, f"{rtype}.{name}", "user_data",
                           f"researchers have shells on {module}, and its user data lets every local user read the "
                           f"instance role's credentials from 169.254.169.254 ({IMDS}); add an nftables rule "
                           "`ip daddr 169.254.169.254 meta skuid != 0 reject` loaded at boot"))  # fmt: skip
    return out


# --- rule 7: an EFA group's one zone is one that offers its instance types ------------------------------------------
EFA_ZONE = (
    'Amazon EC2 User Guide, "Placement groups": a cluster placement group is in one zone, and only the zones that '
    "DescribeInstanceTypeOfferings lists for an instance type launch it"
)


def _follows(scope: Scope, expr: str, target: str, depth: int = 0) -> bool:
    """Whether ``expr`` refers to ``target``, directly or through the module's locals."""
    if target in expr:
        return True
    if depth > 4:
        return False
    local_values = scope.d.locals()
    return any(_follows(scope, str(local_values.get(n, "")), target, depth + 1)
               for n in re.findall(r"local\.(\w+)", expr))  # fmt: skip


def efa_zone(scope: Scope, shown: Path) -> list[Problem]:
    out = []
    for tf, rtype, name, body in scope.d.typed("resource"):
        if rtype != "aws_autoscaling_group" or "aws_placement_group" not in str(
            body.get("placement_group", "")
        ):
            continue
        if _follows(scope, str(body.get("vpc_zone_identifier", "")), "data.aws_ec2_instance_type_offerings"):
            continue
        start = Locator(tf).header("resource", rtype, name)
        out.append(Problem(_show(tf, shown), Locator(tf).argument(start, ("vpc_zone_identifier",)),
                           f"{rtype}.{name}", "vpc_zone_identifier",
                           "a group in a cluster placement group launches in one zone, and this one is not chosen by "
                           f"the instance types' offerings ({EFA_ZONE}); take the zone from "
                           "data.aws_ec2_instance_type_offerings"))  # fmt: skip
    return out


# --- running them ----------------------------------------------------------------------------------------------
@dataclass
class Counts:
    rules: dict[str, int]

    def line(self) -> str:
        return ", ".join(f"{name} {n}" for name, n in self.rules.items())


def check(
    checker: Checker, modules: Path, roots: list[Path], shown: Path, calls: bool = True
) -> tuple[list[Problem], Counts]:
    """Every cross-resource rule over every module (alone) and every rendered root (bound); problems sorted,
    duplicates dropped; the counts say how many objects each rule looked at."""
    from provision.terraform import api_calls

    problems: set[Problem] = set()
    counts = {"root volumes": 0, "KMS log groups": 0, "Lambda functions": 0, "security-group rules": 0,
              "API calls": 0}  # fmt: skip
    for module in sorted(p for p in modules.iterdir() if p.is_dir() and list(p.glob("*.tf"))):
        (alone,) = list(scopes(checker, module, None))[:1]
        problems.update(lambda_concurrency(alone, shown))
        problems.update(ports(alone, shown))
        problems.update(nodes_only(alone, shown))
        problems.update(imds_root_only(alone, shown))
        problems.update(efa_zone(alone, shown))
        counts["Lambda functions"] += sum(
            1 for _, r, _, _ in alone.d.typed("resource") if r == "aws_lambda_function"
        )
        counts["security-group rules"] += sum(1 for _ in ingress_rules(alone))
    for root in roots:
        bound = list(scopes(checker, root, {}))
        for s in bound:
            problems.update(root_volumes(s, shown))
            counts["root volumes"] += sum(
                1 for _, r, _, _ in s.d.typed("resource") if r in ("aws_instance", "aws_launch_template")
            )
            counts["KMS log groups"] += sum(
                1
                for _, r, _, b in s.d.typed("resource")
                if r == "aws_cloudwatch_log_group" and "kms_key_id" in b
            )
        problems.update(log_group_keys(bound, shown))
    if calls:
        found, n = api_calls.check(checker, modules, roots, shown)
        problems.update(found)
        counts["API calls"] = n
    return sorted(problems), Counts(counts)
