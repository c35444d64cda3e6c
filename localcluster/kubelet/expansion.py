"""The kubelet's pure rewrites of a container's words: ``$(VAR)`` expansion, downward API fields, a mount path
rewritten to the volume's folder on this host, a pod's cluster DNS name to loopback, and volume files written."""

from __future__ import annotations

import base64
import re
from pathlib import Path

_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)|\$\$")


def expand(text: str, env: dict) -> str:
    """``$(VAR)`` from the container's env, ``$$`` to ``$``; an unknown ``$(VAR)`` stays as written
    (third_party/forked/golang/expansion: ``Expand``)."""

    def sub(m: re.Match) -> str:
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))

    return _VAR.sub(sub, text)


def field(pod: dict, path: str) -> str:
    """A downward API ``fieldRef`` (pkg/api/v1/pod: ``ConvertDownwardAPIFieldLabel``, kubelet ``podFieldSelectorRuntimeValue``)."""
    meta, spec, status = pod["metadata"], pod["spec"], pod.get("status") or {}
    m = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
    if m:
        return str((meta.get(m.group(1)) or {}).get(m.group(2), ""))
    if path in ("metadata.labels", "metadata.annotations"):
        items = sorted((meta.get(path.split(".")[1]) or {}).items())
        return "\n".join(f'{k}="{v}"' for k, v in items)
    return str(
        {
            "metadata.name": meta.get("name"),
            "metadata.namespace": meta.get("namespace"),
            "metadata.uid": meta.get("uid"),
            "spec.nodeName": spec.get("nodeName"),
            "spec.serviceAccountName": spec.get("serviceAccountName"),
            "status.hostIP": status.get("hostIP"),
            "status.podIP": status.get("podIP"),
            "status.hostIPs": status.get("hostIP"),
            "status.podIPs": status.get("podIP"),
        }.get(path)
        or ""
    )


def dns_names(namespace: str, services: list[str]) -> re.Pattern | None:
    """The cluster DNS names of pods under the namespace's Services (``<hostname>.<svc>``, with or without
    ``.<ns>.svc.cluster.local``, kube-dns's pod records for ``spec.hostname``/``spec.subdomain``): every pod here
    is a process of this host, so they are its loopback address, where the cluster's DNS would give each pod's
    own (such a name inside an env value or an argument is rewritten, as mount paths are)."""
    if not services:
        return None
    alt = "|".join(re.escape(s) for s in sorted(services, key=len, reverse=True))
    suffix = rf"(?:\.{re.escape(namespace)}(?:\.svc(?:\.cluster\.local)?)?)?"
    return re.compile(rf"(?<![\w./-])[a-z0-9](?:[-a-z0-9]*[a-z0-9])?\.(?:{alt}){suffix}(?![\w.-])")


def resolve(text: str, names: re.Pattern | None) -> str:
    return text if names is None else names.sub("127.0.0.1", text)


def remap(text: str, mounts: dict[str, str]) -> str:
    """A ``mountPath`` at the start of ``text`` (or after ``--flag=``) rewritten to the volume's folder here."""
    for path in sorted(mounts, key=len, reverse=True):
        if text == path or text.startswith(path.rstrip("/") + "/"):
            return mounts[path] + text[len(path.rstrip("/")) :]
        head, sep, tail = text.partition("=")  # --flag=/mount/path
        if sep and (tail == path or tail.startswith(path.rstrip("/") + "/")):
            return head + sep + mounts[path] + tail[len(path.rstrip("/")) :]
    return text


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def write_items(d: Path, data: dict, items: list | None, binary: bool) -> None:
    """A configMap's (``binary`` False) or secret's (base64, ``binary`` True) keys as files, or only ``items``."""
    keys = [(i["key"], i.get("path", i["key"])) for i in items] if items else [(k, k) for k in data]
    for key, path in keys:
        if key not in data:
            continue
        raw = base64.b64decode(data[key]) if binary else str(data[key]).encode()
        write(d / path, raw)
