"""ValidatingAdmissionPolicy, as kube-apiserver's built-in ``ValidatingAdmissionPolicy`` plugin runs it
(k8s.io/apiserver pkg/admission/plugin/policy/validating, GA in 1.30).

For every ValidatingAdmissionPolicyBinding whose ``validationActions`` include ``Deny``: its policy's
``matchConstraints`` and the binding's ``matchResources`` must match the request (``resourceRules`` by group,
version, resource and operation, ``*`` matching any; ``namespaceSelector`` and ``objectSelector`` as label
selectors; ``excludeResourceRules``), then the policy's ``matchConditions`` must all hold, then each
``validations`` expression is evaluated; the first that is false refuses the request with the API server's
message (dispatcher.go)::

    pods "x" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: <message>

with the validation's ``reason`` (``Forbidden`` 403, ``Invalid`` 422 when none, ``Unauthorized`` 401,
``RequestEntityTooLarge`` 413) and the message repeated as the one cause. A validation without ``message`` says
``failed expression: <expression>``. An expression that does not compile or fails to evaluate follows the
policy's ``failurePolicy`` (``Fail`` by default: refused with ``expression '<e>' resulted in error: ...``).

The expressions are CEL, evaluated by cel-python (``celpy``, the Common Expression Language's pure-Python
implementation: the standard macros ``has``, ``all``, ``exists``, ``exists_one``, ``map``, ``filter`` and the
standard functions), over the variables kube-apiserver gives a policy: ``object``, ``oldObject``, ``request``
(operation, namespace, name, userInfo), ``namespaceObject``; ``params`` is null (no ``paramKind`` support).
Kubernetes' CEL extension libraries (``quantity()``, ``url()``, ``authorizer``, ...) are not modelled: a policy
using them fails to compile, and so is refused or ignored as its failurePolicy says, never silently passed.
"""

from __future__ import annotations

from autoscaler.emulator.errors import Forbidden, Invalid, StoreError
from autoscaler.model.pods import selector_matches as match_label_selector

CODES = {"Forbidden": 403, "Invalid": 422, "Unauthorized": 401, "RequestEntityTooLarge": 413}


class _Refusal(StoreError):
    def __init__(self, message: str, reason: str, code: int):
        super().__init__(message)
        self.reason, self.code = reason, code


def _matches(values, value: str) -> bool:
    values = list(values or ())
    return "*" in values or value in values


def _rule_matches(rule: dict, group: str, version: str, resource: str, op: str) -> bool:
    resources = rule.get("resources") or []
    return (
        _matches(rule.get("apiGroups"), group)
        and _matches(rule.get("apiVersions"), version)
        and (resource in resources or "*" in resources or "*/*" in resources)
        and (_matches(rule.get("operations"), op) or "ALL" in (rule.get("operations") or ()))
    )


class ValidatingAdmissionPolicies:
    def __init__(self, api) -> None:
        self.api = api
        self._programs: dict[str, object] = {}

    @property
    def store(self):
        return self.api.model.store

    def _program(self, expression: str):
        prog = self._programs.get(expression)
        if prog is None:
            import celpy

            env = celpy.Environment()
            prog = env.program(env.compile(expression))
            self._programs[expression] = prog
        return prog

    def _eval(self, expression: str, activation: dict, any_type: bool = False):
        import celpy

        result = self._program(expression).evaluate(activation)
        if isinstance(result, celpy.CELEvalError):
            raise ValueError(str(result.args[0] if result.args else result))
        if any_type:  # a variable's value
            return result
        if not isinstance(result, celpy.celtypes.BoolType):
            raise ValueError(f"expression must return bool, got {type(result).__name__}")
        return bool(result)

    def _match_resources(self, match: dict | None, res, op: str, obj: dict, ns: dict | None) -> bool:
        match = match or {}
        rules = match.get("resourceRules")
        if rules is not None and not any(
            _rule_matches(r, res.group, res.version, res.plural, op) for r in rules
        ):
            return False
        if any(_rule_matches(r, res.group, res.version, res.plural, op)
               for r in match.get("excludeResourceRules") or ()):  # fmt: skip
            return False
        if res.namespaced and match.get("namespaceSelector") is not None:
            labels = ((ns or {}).get("metadata") or {}).get("labels") or {}
            if not match_label_selector(match["namespaceSelector"], labels):
                return False
        if match.get("objectSelector") is not None:
            labels = (obj.get("metadata") or {}).get("labels") or {}
            if not match_label_selector(match["objectSelector"], labels):
                return False
        return True

    def validate(
        self, op: str, res, obj: dict, old: dict | None, namespace: str | None, user, sub: str
    ) -> None:
        if sub or op not in ("CREATE", "UPDATE", "DELETE", "CONNECT"):
            return
        bindings = self.store.list("validatingadmissionpolicybindings")
        if not bindings:
            return
        ns = self.store.find("namespaces", None, namespace) if namespace else None
        activation = None
        for binding in sorted(bindings, key=lambda b: b["metadata"]["name"]):
            spec = binding.get("spec") or {}
            if "Deny" not in (spec.get("validationActions") or ()):
                continue
            policy = self.store.find("validatingadmissionpolicies", None, spec.get("policyName", ""))
            if policy is None:
                continue
            pspec = policy.get("spec") or {}
            if not self._match_resources(pspec.get("matchConstraints"), res, op, obj, ns):
                continue
            if spec.get("matchResources") and not self._match_resources(
                spec["matchResources"], res, op, obj, ns
            ):
                continue
            if activation is None:
                activation = self._activation(op, res, obj, old, namespace, user, ns)
            self._apply(policy, binding, activation, res, obj)

    def _activation(self, op, res, obj, old, namespace, user, ns) -> dict:
        from celpy import json_to_cel

        name = (obj.get("metadata") or {}).get("name", "")
        request = {
            "operation": op,
            "subResource": "",
            "namespace": namespace or "",
            "name": name,
            "resource": {"group": res.group, "version": res.version, "resource": res.plural},
            "userInfo": {"username": user.name, "groups": list(user.groups)},
        }
        return {
            "object": json_to_cel(obj if op != "DELETE" else None),
            "oldObject": json_to_cel(old),
            "request": json_to_cel(request),
            "namespaceObject": json_to_cel(ns),
            "params": json_to_cel(None),
        }

    def _apply(self, policy: dict, binding: dict, activation: dict, res, obj: dict) -> None:
        pspec = policy.get("spec") or {}
        fail = (pspec.get("failurePolicy") or "Fail") == "Fail"
        pname, bname = policy["metadata"]["name"], binding["metadata"]["name"]

        def check(expression: str) -> bool | None:
            try:
                return self._eval(expression, activation)
            except Exception as e:  # noqa: BLE001 - a compile or evaluation error follows failurePolicy
                if fail:
                    self._deny(
                        pname, bname, f"expression '{expression}' resulted in error: {e}", "", res, obj
                    )
                return None

        import celpy

        values: dict = {}  # spec.variables, in order, each seeing the ones before (as kube-apiserver composes them)
        for var in pspec.get("variables") or ():
            activation = {**activation, "variables": celpy.celtypes.MapType(values)}
            try:
                values[celpy.celtypes.StringType(var["name"])] = self._eval(
                    var["expression"], activation, True
                )
            except Exception as e:  # noqa: BLE001 - as an expression's error: failurePolicy
                if fail:
                    self._deny(
                        pname, bname, f"expression '{var['expression']}' resulted in error: {e}", "", res, obj
                    )
                return
        activation = {**activation, "variables": celpy.celtypes.MapType(values)}
        for cond in pspec.get("matchConditions") or ():
            if check(cond.get("expression", "")) is False:
                return
        for v in pspec.get("validations") or ():
            if check(v.get("expression", "")) is False:
                message = v.get("message") or f"failed expression: {v.get('expression', '').strip()}"
                self._deny(pname, bname, message, v.get("reason") or "", res, obj)

    def _deny(self, pname: str, bname: str, message: str, reason: str, res, obj: dict) -> None:
        text = f"ValidatingAdmissionPolicy '{pname}' with binding '{bname}' denied request: {message}"
        resource = f"{res.plural}.{res.group}" if res.group else res.plural
        name = (obj.get("metadata") or {}).get("name") or ""
        full = f'{resource} "{name}" is forbidden: {text}' if name else f"{resource} is forbidden: {text}"
        reason = reason or "Invalid"
        if reason == "Forbidden":
            err: StoreError = Forbidden(full)
        elif reason == "Invalid":
            err = Invalid(full)
        else:
            err = _Refusal(full, reason, CODES.get(reason, 422))
        details: dict = {"kind": res.plural, "causes": [{"message": text}]}
        if name:
            details["name"] = name
        if res.group:
            details["group"] = res.group
        err.details = details
        raise err
