"""A kubeconfig pointing at the emulator (plain HTTP on loopback, no credentials)."""

from __future__ import annotations

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


def write_kubeconfig(
    path: str | Path, server: str, name: str = "emulator", namespace: str = "default"
) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(kubeconfig(server, name, namespace), sort_keys=False))
    path.chmod(0o600)
    return path
