"""Field validation of written objects, with kube-apiserver's messages (a subset of its rules).

An object that fails is refused with 422 Invalid, the message ``<Kind> "<name>" is invalid: <field>: <detail>``
(several errors in brackets, comma-separated) and one cause per error, as apimachinery's
``errors.NewInvalid`` builds them from a ``field.ErrorList``. The rules and messages follow
apimachinery/pkg/util/validation (names, labels) and pkg/apis/core/validation (taints, containers).
"""

from __future__ import annotations

import re

from autoscaler.model.store import Invalid

_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
TAINT_EFFECTS = ("NoExecute", "NoSchedule", "PreferNoSchedule")


class _Errors(list):
    def required(self, field: str) -> None:
        self.append((field, "FieldValueRequired", "Required value"))

    def invalid(self, field: str, value, detail: str) -> None:
        self.append((field, "FieldValueInvalid", f'Invalid value: "{value}": {detail}'))

    def unsupported(self, field: str, value, supported) -> None:
        shown = ", ".join(f'"{s}"' for s in supported)
        self.append(
            (field, "FieldValueNotSupported", f'Unsupported value: "{value}": supported values: {shown}')
        )


def _labels(labels, errors: _Errors) -> None:
    if not isinstance(labels, dict):
        return
    for key, value in labels.items():
        name = str(key).rsplit("/", 1)[-1]
        if not name or len(name) > 63 or not _NAME_PART.fullmatch(name):
            errors.invalid("metadata.labels", key, NAME_PART_MSG)
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
            errors.invalid("metadata.labels", value, LABEL_VALUE_MSG)


def validate(plural: str, kind: str, obj: dict) -> None:
    """Raise Invalid (422) with the API server's message when ``obj`` breaks a rule."""
    errors = _Errors()
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if name is not None and (len(str(name)) > 253 or not _SUBDOMAIN.fullmatch(str(name))):
        errors.invalid("metadata.name", name, SUBDOMAIN_MSG)
    _labels(meta.get("labels"), errors)
    spec = obj.get("spec") or {}
    if plural == "nodes":
        for i, taint in enumerate(spec.get("taints") or []):
            if not isinstance(taint, dict):
                continue
            if not taint.get("key"):
                errors.required(f"spec.taints[{i}].key")
            if not taint.get("effect"):
                errors.required(f"spec.taints[{i}].effect")
            elif taint["effect"] not in TAINT_EFFECTS:
                errors.unsupported(f"spec.taints[{i}].effect", taint["effect"], TAINT_EFFECTS)
    if plural == "pods" and not spec.get("containers"):
        errors.required("spec.containers")
    if not errors:
        return
    parts = [f"{field}: {message}" for field, _, message in errors]
    shown = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    err = Invalid(f'{kind} "{name or meta.get("generateName") or ""}" is invalid: {shown}')
    err.details = {
        "name": name or "",
        "kind": kind,
        "causes": [{"reason": r, "message": m, "field": f} for f, r, m in errors],
    }
    raise err
