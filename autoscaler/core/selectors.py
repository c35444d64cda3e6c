"""Label selectors, node selector requirements and taint tolerations: parsing into tuples and matching.

The one selector parser of the project: the planner and the cluster model
use it. Parsed forms are hashable tuples so that pod shapes holding them can be interned and cached. Label keys
and values are checked by Kubernetes' rules (k8s.io/apimachinery/pkg/util/validation: ``IsQualifiedName``,
``IsValidLabelValue``); the text form follows ``labels.Parse`` (k8s.io/apimachinery/pkg/labels/selector.go).
"""

from __future__ import annotations

import re

NODE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")

# A requirement: (key, operator, values tuple). A selector: tuple of requirements (AND).

_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_INT64 = 1 << 63


def parse_int64(text: object) -> int | None:
    """The integer Go's ``strconv.ParseInt(text, 10, 64)`` reads (an optional sign, ASCII digits, 64 bits), as
    Kubernetes reads a Gt/Lt value and the node label it compares (apimachinery labels ``Requirement.Matches``,
    validation ``ValidateNodeSelectorRequirement``); None when it is not one."""
    if not isinstance(text, str) or not _INTEGER.fullmatch(text):
        return None
    value = int(text)
    return value if -_INT64 <= value < _INT64 else None


_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def label_key_problem(key: object) -> str | None:
    """None for a valid label (or annotation) key: an optional DNS-subdomain prefix (at most 253 characters) and
    "/", then a name of at most 63 alphanumerics, "-", "_", "."; else what is wrong."""
    if not isinstance(key, str):
        return f"key {key!r} is not a string"
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return f"key {key!r} has an invalid prefix; use a DNS subdomain such as example.com/"
    if not name or len(name) > 63 or not _NAME.fullmatch(name):
        return (
            f"key {key!r} is not a valid name; use at most 63 letters, digits, '-', '_', '.', "
            "starting and ending with a letter or digit"
        )
    return None


def label_value_problem(value: object) -> str | None:
    """None for a valid label value (empty, or at most 63 characters as for a name); else what is wrong."""
    if not isinstance(value, str):
        return f"value {value!r} is not a string"
    if value and (len(value) > 63 or not _NAME.fullmatch(value)):
        return (
            f"value {value!r} is not a valid label value; use at most 63 letters, digits, '-', '_', '.', "
            "starting and ending with a letter or digit (or empty)"
        )
    return None


_TEXT_TERM = re.compile(
    r"\s*(?:(?P<neg>!)\s*(?P<nkey>[^\s!=<>(),]+)"
    r"|(?P<skey>[^\s!=<>(),]+)\s+(?P<setop>in|notin)\s*\((?P<values>[^()]*)\)"
    r"|(?P<ekey>[^\s!=<>(),]+)\s*(?P<op>==|=|!=|>|<)\s*(?P<value>[^\s!=<>(),]*)"
    r"|(?P<key>[^\s!=<>(),]+))\s*"
)


def parse_selector_text(text: str | None) -> tuple:
    """A label selector in its text form (``a=b,c!=d,e in (x,y),!f,g>3``) as requirements; ValueError naming the
    term when it is malformed or a key or value is invalid."""
    out = []
    text = text or ""
    pos = 0
    while text.strip() and pos <= len(text):
        m = _TEXT_TERM.match(text, pos)
        if m is None or m.end() == m.start():
            raise ValueError(f"unable to parse requirement: {text[pos:]!r}")
        g = m.groupdict()
        if g["nkey"]:
            key, req = g["nkey"], (g["nkey"], "DoesNotExist", ())
        elif g["skey"]:
            values = tuple(v.strip() for v in g["values"].split(","))
            key = g["skey"]
            for v in values:
                if label_value_problem(v):
                    raise ValueError(
                        f"invalid value in requirement {m.group(0).strip()!r}: {label_value_problem(v)}"
                    )
            req = (key, "In" if g["setop"] == "in" else "NotIn", tuple(sorted(set(values))))
        elif g["ekey"]:
            key, op, value = g["ekey"], g["op"], g["value"]
            if op in (">", "<"):
                if parse_int64(value) is None:
                    raise ValueError(f"operator {op} in {m.group(0).strip()!r} needs an integer value")
                if label_value_problem(
                    value
                ):  # labels.NewRequirement checks every value as a label value too
                    raise ValueError(
                        f"invalid value in requirement {m.group(0).strip()!r}: {label_value_problem(value)}"
                    )
                req = (key, "Gt" if op == ">" else "Lt", (value,))
            else:
                if label_value_problem(value):
                    raise ValueError(
                        f"invalid value in requirement {m.group(0).strip()!r}: {label_value_problem(value)}"
                    )
                req = (key, "NotIn" if op == "!=" else "In", (value,))
        else:
            key, req = g["key"], (g["key"], "Exists", ())
        problem = label_key_problem(key)
        if problem:
            raise ValueError(f"invalid requirement {m.group(0).strip()!r}: {problem}")
        out.append(req)
        pos = m.end()
        if pos >= len(text):
            break
        if text[pos] != ",":
            raise ValueError(
                f"unable to parse requirement: {text[pos:]!r} (requirements are separated by ',')"
            )
        pos += 1
        if not text[pos:].strip():
            raise ValueError("unable to parse requirement: empty requirement after ','")
    return tuple(out)


def parse_requirements(raw: object, where: str, errors: list[str], operators=NODE_OPERATORS) -> tuple:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        errors.append(f"{where}: expected a list of {{key, operator, values}}")
        return ()
    out = []
    for i, req in enumerate(raw):
        w = f"{where}[{i}]"
        if not isinstance(req, dict) or not isinstance(req.get("key"), str):
            errors.append(f"{w}: expected {{key, operator, values}} with a string key")
            continue
        op = req.get("operator")
        if op not in operators:
            errors.append(f"{w}.operator: {op!r} is not one of {', '.join(operators)}")
            continue
        values = req.get("values") or []
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            errors.append(f"{w}.values: expected a list of strings")
            continue
        if op in ("In", "NotIn") and not values:
            errors.append(f"{w}.values: operator {op} needs at least one value")
            continue
        if op in ("Gt", "Lt") and (len(values) != 1 or parse_int64(values[0]) is None):
            errors.append(f"{w}.values: operator {op} needs exactly one integer value, got {values}")
            continue
        out.append((req["key"], op, tuple(values)))
    return tuple(out)


def requirement_holds(req: tuple, labels: dict) -> bool:
    key, op, values = req
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    value = parse_int64(labels.get(key))
    if value is None:
        return False  # a label that is not an integer matches neither Gt nor Lt
    bound = parse_int64(values[0])
    return bound is not None and (value > bound if op == "Gt" else value < bound)


def selector_matches(selector: tuple, labels: dict) -> bool:
    return all(requirement_holds(r, labels) for r in selector)


def label_map(raw: dict, where: str, errors: list[str]) -> tuple:
    """A map of label key to value (a nodeSelector, a selector's matchLabels) as In requirements, keys and values
    checked as labels (Kubernetes validates both as it validates labels: apimachinery ``ValidateLabels``); a
    value that is not a string (4, true) is refused, as the API server refuses it, never turned into one."""
    out = []
    for k, v in sorted(raw.items(), key=lambda kv: str(kv[0])):
        problem = label_key_problem(k) or label_value_problem(v)
        if problem is None:
            out.append((k, "In", (v,)))
        elif not isinstance(v, str) and isinstance(k, str):
            text = "true" if v is True else "false" if v is False else v
            errors.append(f'{where}.{k}: value {v!r} is not a string; quote it ("{text}")')
        else:
            errors.append(f"{where}: {problem}")
    return tuple(out)


def parse_label_selector(raw: object, where: str, errors: list[str]) -> tuple | None:
    """A metav1.LabelSelector as a tuple of requirements; None (matches nothing) when absent."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        errors.append(f"{where}: expected {{matchLabels, matchExpressions}}")
        return None
    reqs = []
    ml = raw.get("matchLabels") or {}
    if not isinstance(ml, dict):
        errors.append(f"{where}.matchLabels: expected a mapping of label to value")
    else:
        reqs.extend(label_map(ml, f"{where}.matchLabels", errors))
    reqs.extend(
        parse_requirements(raw.get("matchExpressions"), f"{where}.matchExpressions", errors, LABEL_OPERATORS)
    )
    return tuple(reqs)


def parse_taints(raw: object, where: str, errors: list[str]) -> tuple:
    """Taints as (key, value, effect) tuples."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        errors.append(f"{where}: expected a list of {{key, value, effect}}")
        return ()
    out = []
    for i, t in enumerate(raw):
        if not isinstance(t, dict) or not isinstance(t.get("key"), str) or not t.get("key"):
            errors.append(f"{where}[{i}]: expected {{key, value, effect}} with a non-empty key")
            continue
        if t.get("effect") not in TAINT_EFFECTS:
            errors.append(
                f"{where}[{i}].effect: {t.get('effect')!r} is not one of {', '.join(TAINT_EFFECTS)}"
            )
            continue
        out.append((t["key"], str(t.get("value") or ""), t["effect"]))
    return tuple(out)


def parse_tolerations(raw: object, where: str, errors: list[str]) -> tuple:
    """Tolerations as (key, operator, value, effect) tuples."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        errors.append(f"{where}: expected a list of tolerations")
        return ()
    out = []
    for i, t in enumerate(raw):
        if not isinstance(t, dict):
            errors.append(f"{where}[{i}]: expected {{key, operator, value, effect}}")
            continue
        op = t.get("operator") or "Equal"
        if op not in ("Equal", "Exists"):
            errors.append(f"{where}[{i}].operator: {op!r} is not one of Equal, Exists")
            continue
        effect = t.get("effect") or ""
        if effect and effect not in TAINT_EFFECTS:
            errors.append(
                f"{where}[{i}].effect: {effect!r} is not one of {', '.join(TAINT_EFFECTS)} or empty"
            )
            continue
        out.append((t.get("key") or "", op, str(t.get("value") or ""), effect))
    return tuple(out)


def tolerates(tolerations: tuple, taint: tuple) -> bool:
    key, value, effect = taint
    for tkey, op, tvalue, teffect in tolerations:
        if teffect and teffect != effect:
            continue
        if not tkey:
            if op == "Exists":
                return True
            continue
        if tkey != key:
            continue
        if op == "Exists" or tvalue == value:
            return True
    return False


def untolerated(tolerations: tuple, taints: tuple) -> tuple | None:
    """The first taint that blocks scheduling and is not tolerated, else None."""
    for taint in taints:
        if taint[2] in BLOCKING_EFFECTS and not tolerates(tolerations, taint):
            return taint
    return None


def show_taint(taint: tuple) -> str:
    key, value, effect = taint
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def show_requirement(req: tuple) -> str:
    key, op, values = req
    if op == "In" and len(values) == 1:
        return f"{key}={values[0]}"
    if op == "In":
        return f"{key} in ({','.join(values)})"
    if op == "NotIn":
        return f"{key} notin ({','.join(values)})"
    if op == "Exists":
        return key
    if op == "DoesNotExist":
        return f"!{key}"
    return f"{key} {'>' if op == 'Gt' else '<'} {values[0]}"
