"""Protobuf request bodies (``application/vnd.kubernetes.protobuf``) for the few kinds kubectl's typed generators send
that way: ``kubectl auth can-i`` (SelfSubjectAccessReview, SelfSubjectRulesReview), ``kubectl auth whoami``
(SelfSubjectReview), ``kubectl create token`` (TokenRequest), ``kubectl certificate approve`` (the approval of a
CertificateSigningRequest) and ``kubectl create namespace``. No well-kept Python library carries Kubernetes' generated
protobuf types, so these few messages are read here from the wire format (the ``k8s\\x00`` envelope of a
``runtime.Unknown`` holding the type and the raw message; field numbers of k8s.io/api's ``generated.proto``); any
other kind in protobuf is 415, as a server without that serializer answers. Replies are JSON (the clients accept it)."""

from __future__ import annotations

MAGIC = b"k8s\x00"


def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7


def fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) of a message: varints as ints, length-delimited as bytes."""
    out, i = [], 0
    while i < len(data):
        key, i = _varint(data, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 2:
            n, i = _varint(data, i)
            value, i = data[i : i + n], i + n
        elif wire == 1:
            value, i = data[i : i + 8], i + 8
        elif wire == 5:
            value, i = data[i : i + 4], i + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        out.append((num, value))
    return out


def _strings(msg: bytes, names: dict[int, str]) -> dict:
    out = {}
    for num, value in fields(msg):
        if num in names and isinstance(value, bytes):
            out[names[num]] = value.decode()
    return out


def _map(entries: list[bytes]) -> dict[str, str]:
    out = {}
    for e in entries:
        kv = _strings(e, {1: "k", 2: "v"})
        out[kv.get("k", "")] = kv.get("v", "")
    return out


def _meta(msg: bytes) -> dict:
    meta = _strings(msg, {1: "name", 2: "generateName", 3: "namespace", 6: "resourceVersion"})
    labels = [v for n, v in fields(msg) if n == 11]
    annotations = [v for n, v in fields(msg) if n == 12]
    finalizers = [v.decode() for n, v in fields(msg) if n == 14]
    if labels:
        meta["labels"] = _map(labels)
    if annotations:
        meta["annotations"] = _map(annotations)
    if finalizers:
        meta["finalizers"] = finalizers
    return meta


def _sub(msg: bytes, num: int) -> bytes | None:
    return next((v for n, v in fields(msg) if n == num and isinstance(v, bytes)), None)


def _namespace(raw: bytes) -> dict:
    obj: dict = {"metadata": _meta(_sub(raw, 1) or b"")}
    spec = _sub(raw, 2)
    if spec is not None:
        obj["spec"] = {"finalizers": [v.decode() for n, v in fields(spec) if n == 1]}
    return obj


def _ssar(raw: bytes) -> dict:
    spec = _sub(raw, 2) or b""
    out: dict = {}
    ra = _sub(spec, 1)
    if ra is not None:
        out["resourceAttributes"] = _strings(ra, {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource",
                                                  6: "subresource", 7: "name"})  # fmt: skip
    nra = _sub(spec, 2)
    if nra is not None:
        out["nonResourceAttributes"] = _strings(nra, {1: "path", 2: "verb"})
    return {"metadata": _meta(_sub(raw, 1) or b""), "spec": out}


def _ssrr(raw: bytes) -> dict:
    spec = _sub(raw, 2) or b""
    return {"metadata": _meta(_sub(raw, 1) or b""), "spec": _strings(spec, {1: "namespace"})}


def _token_request(raw: bytes) -> dict:
    spec = _sub(raw, 2) or b""
    out: dict = {"audiences": [v.decode() for n, v in fields(spec) if n == 1]}
    for n, v in fields(spec):
        if n == 4 and isinstance(v, int):
            out["expirationSeconds"] = v
        if n == 3 and isinstance(v, bytes):
            out["boundObjectRef"] = _strings(v, {1: "kind", 2: "apiVersion", 3: "name", 4: "uid"})
    if not out["audiences"]:
        del out["audiences"]
    return {"metadata": _meta(_sub(raw, 1) or b""), "spec": out}


def _csr(raw: bytes) -> dict:
    """A CertificateSigningRequest as ``kubectl certificate approve|deny`` puts it to /approval: the conditions are
    what the handler reads (the rest is taken from the stored request)."""
    status = _sub(raw, 3) or b""
    conditions = [
        _strings(c, {1: "type", 6: "status", 2: "reason", 3: "message"})
        for n, c in fields(status) if n == 1 and isinstance(c, bytes)
    ]  # fmt: skip
    return {"metadata": _meta(_sub(raw, 1) or b""), "status": {"conditions": conditions}}


def _ssr(raw: bytes) -> dict:
    return {"metadata": _meta(_sub(raw, 1) or b"")}


DECODERS = {
    ("v1", "Namespace"): _namespace,
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): _ssar,
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): _ssrr,
    ("authentication.k8s.io/v1", "SelfSubjectReview"): _ssr,
    ("authentication.k8s.io/v1", "TokenRequest"): _token_request,
    ("certificates.k8s.io/v1", "CertificateSigningRequest"): _csr,
}


def decode(body: bytes) -> dict | None:
    """The object a protobuf body holds, as JSON would give it; None for a kind read only as JSON."""
    if not body.startswith(MAGIC):
        return None
    unknown = body[len(MAGIC) :]
    type_meta = _strings(_sub(unknown, 1) or b"", {1: "apiVersion", 2: "kind"})
    raw = _sub(unknown, 2) or b""
    decoder = DECODERS.get((type_meta.get("apiVersion", ""), type_meta.get("kind", "")))
    if decoder is None:
        return None
    obj = decoder(raw)
    obj["apiVersion"], obj["kind"] = type_meta["apiVersion"], type_meta["kind"]
    return obj
