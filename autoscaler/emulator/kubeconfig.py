"""Kubeconfigs for the emulator: the admin's (the secure port, the cluster CA, a client certificate in
``system:masters``, as kubeadm's admin.conf), one with a bearer token, and a plain one for the insecure port."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml


def kubeconfig(server: str, name: str = "emulator", namespace: str = "default") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server}}],
        "users": [{"name": name, "user": {"token": "emulator"}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}],
        "current-context": name,
        "preferences": {},
    }


def _write(path: str | Path, doc: dict) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    path.chmod(0o600)
    return path


def write_kubeconfig(
    path: str | Path, server: str, name: str = "emulator", namespace: str = "default"
) -> Path:
    """A kubeconfig for ``server`` without credentials the server checks (the insecure port)."""
    return _write(path, kubeconfig(server, name, namespace))


def write_admin_kubeconfig(path: str | Path, server: str, ca_pem: bytes, cert: bytes | None = None,
                           key: bytes | None = None, *, token: str | None = None, name: str = "emulator",
                           namespace: str = "default") -> Path:  # fmt: skip
    user: dict = {}
    if cert is not None and key is not None:
        user = {"client-certificate-data": base64.b64encode(cert).decode(),
                "client-key-data": base64.b64encode(key).decode()}  # fmt: skip
    if token is not None:
        user["token"] = token
    user_name = "kubernetes-admin" if cert is not None else f"{name}-token"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server,
                                                "certificate-authority-data": base64.b64encode(ca_pem).decode()}}],
        "users": [{"name": user_name, "user": user}],
        "contexts": [{"name": f"{user_name}@{name}", "context": {"cluster": name, "user": user_name,
                                                                   "namespace": namespace}}],
        "current-context": f"{user_name}@{name}",
        "preferences": {},
    }  # fmt: skip
    return _write(path, doc)
