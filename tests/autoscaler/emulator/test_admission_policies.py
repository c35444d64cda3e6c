"""ValidatingAdmissionPolicy in the emulator (autoscaler/emulator/admission/policies.py), held to kube-apiserver's
plugin: the binding's namespace selector, Deny versus Warn-only bindings, the validation's reason as the status
code (Invalid 422 when none), the default message, and failurePolicy on an expression that does not compile."""

from __future__ import annotations

import pytest

from autoscaler.emulator import Emulator
from autoscaler.emulator.errors import StoreError
from autoscaler.model import ClusterModel, VirtualClock


def _policy(name, expression, *, reason=None, message=None, failure="Fail"):
    v = {"expression": expression}
    if reason:
        v["reason"] = reason
    if message:
        v["message"] = message
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {"failurePolicy": failure, "validations": [v],
                     "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                             "operations": ["CREATE"], "resources": ["configmaps"]}]}}}  # fmt: skip


def _binding(name, actions=("Deny",), selector=None):
    spec = {"policyName": name, "validationActions": list(actions)}
    if selector is not None:
        spec["matchResources"] = {"namespaceSelector": selector}
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name}, "spec": spec}  # fmt: skip


def _cm(name, ns="team", data=None):
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": data or {},
    }


@pytest.fixture
def emu():
    with Emulator(ClusterModel(VirtualClock(start=1_767_225_600.0), []), namespaces=("team",)) as e:
        e.create_namespace("tenant", {"tier": "tenant"})
        yield e


def _refusal(emu, obj) -> StoreError:
    with pytest.raises(StoreError) as e:
        emu.apply(obj)
    return e.value


def test_a_false_validation_refuses_with_the_api_servers_message_and_reason(emu):
    emu.apply(_policy("no-x", "!has(object.data.x)", reason="Forbidden", message="no x here"))
    emu.apply(_binding("no-x"))
    err = _refusal(emu, _cm("a", data={"x": "1"}))
    assert (err.code, err.reason) == (403, "Forbidden")
    assert str(err) == ('configmaps "a" is forbidden: ValidatingAdmissionPolicy \'no-x\' with binding \'no-x\' '
                        "denied request: no x here")  # fmt: skip
    assert err.details["causes"] == [{"message": str(err).split(" is forbidden: ", 1)[1]}]
    emu.apply(_cm("b", data={"y": "1"}))


def test_no_reason_is_invalid_and_no_message_names_the_expression(emu):
    emu.apply(_policy("small", "size(object.data) < 2"))
    emu.apply(_binding("small"))
    err = _refusal(emu, _cm("a", data={"x": "1", "y": "2"}))
    assert (err.code, err.reason) == (422, "Invalid")
    assert str(err).endswith("denied request: failed expression: size(object.data) < 2")


def test_the_binding_selects_namespaces_and_warn_only_bindings_refuse_nothing(emu):
    emu.apply(_policy("no-x", "!has(object.data.x)"))
    emu.apply(_binding("no-x", selector={"matchLabels": {"tier": "tenant"}}))
    emu.apply(_cm("a", ns="team", data={"x": "1"}))  # not a tenant namespace
    assert _refusal(emu, _cm("a", ns="tenant", data={"x": "1"})).code == 422
    emu.apply(_policy("no-y", "!has(object.data.y)"))
    emu.apply(_binding("no-y", actions=("Warn", "Audit")))
    emu.apply(_cm("b", ns="team", data={"y": "1"}))


def test_an_expression_that_does_not_compile_follows_the_failure_policy(emu):
    emu.apply(_policy("broken", "object.data.(", failure="Fail"))
    emu.apply(_binding("broken"))
    assert "resulted in error" in str(_refusal(emu, _cm("a")))
    emu.apply(_policy("ignored", "object.data.(", failure="Ignore") | {"metadata": {"name": "ignored"}})
    emu.apply(_binding("ignored"))
    with emu.model.lock:
        emu.model.store.delete("validatingadmissionpolicybindings", None, "broken")
    emu.apply(_cm("b"))
