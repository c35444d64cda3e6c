"""API errors as kube-apiserver returns them: a ``Status`` object with ``reason``, ``code``, ``message`` and
``details`` (apimachinery pkg/api/errors: ``NewNotFound``, ``NewForbidden``, ``NewInvalid``, ...)."""

from __future__ import annotations

from autoscaler.model.store import AlreadyExists, Conflict, Invalid, NotFound, StoreError

__all__ = [
    "AlreadyExists",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "MethodNotAllowed",
    "NotAcceptable",
    "NotFound",
    "StoreError",
    "TooLargeResourceVersion",
    "Unauthorized",
    "UnsupportedMediaType",
    "forbidden",
    "not_found",
    "status_body",
]


class BadRequest(StoreError):
    reason, code = "BadRequest", 400


class Unauthorized(StoreError):
    reason, code = "Unauthorized", 401


class Forbidden(StoreError):
    reason, code = "Forbidden", 403


class MethodNotAllowed(StoreError):
    reason, code = "MethodNotAllowed", 405


class NotAcceptable(StoreError):
    reason, code = "NotAcceptable", 406


class Gone(StoreError):
    reason, code = "Expired", 410


class UnsupportedMediaType(StoreError):
    reason, code = "UnsupportedMediaType", 415


class TooLargeResourceVersion(StoreError):
    """A list or watch from a resourceVersion the server has not reached (a client that talked to a server before
    a restart or an etcd restore): kube-apiserver waits up to 3 s for it, then answers 504 Timeout with the cause
    ResourceVersionTooLarge (apimachinery errors.NewTooLargeResourceVersionError), on which clients relist."""

    reason, code = "Timeout", 504
    wait_s = 3.0

    def __init__(self, wanted: int, current: int):
        super().__init__(f"Timeout: Too large resource version: {wanted}, current: {current}")
        self.details = {
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        }


def status_body(code: int, reason: str, message: str, details: dict | None = None) -> dict:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 400 else "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def _qualified(group_resource: str, name: str | None) -> str:
    return f'{group_resource} "{name}"' if name else group_resource


def not_found(group: str, plural: str, name: str) -> NotFound:
    """``<plural>[.<group>] "<name>" not found`` (errors.NewNotFound)."""
    resource = f"{plural}.{group}" if group else plural
    err = NotFound(f'{resource} "{name}" not found')
    err.details = {"name": name, "group": group, "kind": plural} if group else {"name": name, "kind": plural}
    return err


def forbidden(group: str, plural: str, name: str | None, why: str) -> Forbidden:
    """``<resource> "<name>" is forbidden: <why>`` (errors.NewForbidden)."""
    resource = f"{plural}.{group}" if group else plural
    err = Forbidden(f"{_qualified(resource, name)} is forbidden: {why}")
    details: dict = {"kind": plural}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    err.details = details
    return err
