"""An image tag's digest, from its registry (the OCI distribution API), for provision/data/images.yaml.

``GET /v2/<repository>/manifests/<tag>`` with the manifest media types accepted, and where the registry answers
401 with a ``Bearer`` challenge, an anonymous pull token from the challenge's realm first (the Docker registry
token protocol, which Docker Hub, ghcr.io, quay.io, registry.k8s.io, public.ecr.aws and nvcr.io all serve for
public images). A registry that needs credentials (the lab's own ECR repositories: ``Basic`` with the token of ECR's
GetAuthorizationToken, provision/lab_images.py) gets ``authorization`` on the first request instead. The digest is
the SHA-256 of the manifest bytes as served (the image index, for multi-platform images), computed here; a ``Docker-Content-Digest`` header that disagrees is an error, not a second opinion.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

ACCEPT = ", ".join((
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
))  # fmt: skip
_CHALLENGE = re.compile(r'(\w+)="([^"]*)"')


class RegistryError(Exception):
    """One line: what could not be resolved, and why."""


@dataclass(frozen=True)
class Reference:
    registry: str  # host[:port] as the image names it (docker.io for Docker Hub)
    repository: str
    tag: str

    @property
    def api_host(self) -> str:
        return "registry-1.docker.io" if self.registry == "docker.io" else self.registry


def parse(image: str) -> Reference:
    """``[registry/]repository:tag``; Docker Hub's short names as Docker reads them (``library/`` for one part)."""
    if "@" in image:
        raise RegistryError(f"{image}: already names a digest")
    name, _, tag = image.rpartition(":")
    if not name or "/" in tag:
        raise RegistryError(f"{image}: names no tag (expected repository:tag)")
    first, _, rest = name.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        registry, repository = first, rest
    else:
        registry, repository = "docker.io", name
    if registry == "docker.io" and "/" not in repository:
        repository = f"library/{repository}"
    return Reference(registry, repository, tag)


def _token(challenge: str, repository: str, opener) -> str:
    fields = dict(_CHALLENGE.findall(challenge))
    if not challenge.lower().startswith("bearer") or "realm" not in fields:
        raise RegistryError(
            f"the registry asks for {challenge.split(' ', 1)[0]} credentials, not an anonymous token"
        )
    query = {"scope": fields.get("scope") or f"repository:{repository}:pull"}
    if "service" in fields:
        query["service"] = fields["service"]
    with opener(urllib.request.Request(f"{fields['realm']}?{urllib.parse.urlencode(query)}")) as reply:
        body = json.loads(reply.read() or b"{}")
    token = body.get("token") or body.get("access_token")
    if not token:
        raise RegistryError("the registry's token service returned no token")
    return token


def digest(image: str, *, base_url: Callable[[Reference], str] | None = None, opener=None,
           timeout_s: float = 30.0, authorization: str | None = None) -> str:  # fmt: skip
    """``sha256:<hex>`` of ``image``'s manifest as its registry serves it now. ``base_url`` maps a reference to its
    API's base (default ``https://<host>``; the tests point it at a registry on loopback)."""
    ref = parse(image)
    base = (base_url or (lambda r: f"https://{r.api_host}"))(ref)
    url = f"{base}/v2/{ref.repository}/manifests/{ref.tag}"
    open_ = opener or (lambda req: urllib.request.urlopen(req, timeout=timeout_s))  # noqa: S310 (https or a test's)
    headers = {"Accept": ACCEPT} | ({"Authorization": authorization} if authorization else {})
    try:
        for attempt in range(2):
            try:
                with open_(urllib.request.Request(url, headers=headers)) as reply:
                    body, said = reply.read(), reply.headers.get("Docker-Content-Digest")
                break
            except urllib.error.HTTPError as e:
                if e.code == 401 and attempt == 0 and not authorization and e.headers.get("WWW-Authenticate"):
                    headers["Authorization"] = (
                        f"Bearer {_token(e.headers['WWW-Authenticate'], ref.repository, open_)}"
                    )
                    continue
                what = {
                    401: "the credentials were refused"
                    if authorization
                    else "not allowed without credentials",
                    404: "no such repository or tag",
                }.get(  # fmt: skip
                    e.code, e.reason
                )
                raise RegistryError(f"{image}: {url}: HTTP {e.code} ({what})") from None
    except (urllib.error.URLError, OSError) as e:
        raise RegistryError(f"{image}: {url}: {getattr(e, 'reason', e)}") from None
    got = "sha256:" + hashlib.sha256(body).hexdigest()
    if said and said != got:
        raise RegistryError(f"{image}: the registry says {said}, but the manifest it served hashes to {got}")
    return got
