"""`invoke pin-images` (provision/pin_images.py, provision/registry.py): each image's digest from its registry,
against a registry on loopback that speaks the OCI distribution API with the Docker token protocol as the public
registries do (401 with a Bearer challenge, an anonymous pull token, the manifest with Docker-Content-Digest)."""

from __future__ import annotations

import hashlib
import http.server
import json
import shutil
import threading
import urllib.parse

import pytest

from clusterspec.errors import UserError
from provision import images, pin_images, registry

INDEX = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                    "manifests": []}).encode()  # fmt: skip


class Registry(http.server.ThreadingHTTPServer):
    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.manifests: dict[tuple[str, str], bytes] = {}
        self.lie: set[tuple[str, str]] = set()  # answer these with a wrong Docker-Content-Digest
        self.seen: list[dict] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):  # noqa: N802
        srv: Registry = self.server
        parts = urllib.parse.urlsplit(self.path)
        if parts.path == "/token":
            q = dict(urllib.parse.parse_qsl(parts.query))
            assert q["service"] == "test-registry" and q["scope"].endswith(":pull"), q
            return self._reply(200, json.dumps({"token": "anon-" + q["scope"]}).encode())
        _, _, repo_tag = parts.path.partition("/v2/")
        repo, _, tag = repo_tag.partition("/manifests/")
        srv.seen.append({"path": parts.path, "accept": self.headers.get("Accept", "")})
        if self.headers.get("Authorization") != f"Bearer anon-repository:{repo}:pull":
            challenge = (f'Bearer realm="{srv.url}/token",service="test-registry",'
                         f'scope="repository:{repo}:pull"')  # fmt: skip
            return self._reply(401, b"{}", {"WWW-Authenticate": challenge})
        body = srv.manifests.get((repo, tag))
        if body is None:
            return self._reply(404, b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}')
        said = "sha256:" + hashlib.sha256(b"other" if (repo, tag) in srv.lie else body).hexdigest()
        return self._reply(200, body, {"Docker-Content-Digest": said})

    def _reply(self, code, body, headers=None):
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def reg():
    srv = Registry()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _resolve(reg):
    return lambda image: registry.digest(image, base_url=lambda ref: reg.url)


@pytest.mark.parametrize(
    ("image", "host", "repository", "tag"),
    [
        ("docker.io/flannel/flannel:v0.26.1", "registry-1.docker.io", "flannel/flannel", "v0.26.1"),
        ("python:3.11.11-slim-bookworm", "registry-1.docker.io", "library/python", "3.11.11-slim-bookworm"),
        ("registry.k8s.io/pause:3.10", "registry.k8s.io", "pause", "3.10"),
        (
            "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04",
            "nvcr.io",
            "nvidia/k8s/dcgm-exporter",
            "4.2.3-4.1.3-ubuntu22.04",
        ),
        ("localhost:5000/team/img:1", "localhost:5000", "team/img", "1"),
    ],
)
def test_references_are_read_as_docker_reads_them(image, host, repository, tag) -> None:
    ref = registry.parse(image)
    assert (ref.api_host, ref.repository, ref.tag) == (host, repository, tag)


@pytest.mark.parametrize("image", ["localhost:5000/img", "quay.io/a/b@sha256:" + "0" * 64])
def test_a_reference_without_a_tag_is_refused(image) -> None:
    with pytest.raises(registry.RegistryError):
        registry.parse(image)


def test_the_digest_is_the_hash_of_the_manifest_served_after_an_anonymous_token(reg) -> None:
    reg.manifests[("flannel/flannel", "v0.26.1")] = INDEX
    got = _resolve(reg)("docker.io/flannel/flannel:v0.26.1")
    assert got == "sha256:" + hashlib.sha256(INDEX).hexdigest()
    assert len(reg.seen) == 2  # the 401 with its challenge, then the manifest with the token
    assert (
        "application/vnd.oci.image.index.v1+json" in reg.seen[-1]["accept"]
    )  # the index, not one platform's


def test_a_registry_whose_digest_header_disagrees_with_its_bytes_is_an_error(reg) -> None:
    reg.manifests[("pause", "3.10")] = INDEX
    reg.lie.add(("pause", "3.10"))
    with pytest.raises(registry.RegistryError, match="hashes to sha256:"):
        _resolve(reg)("registry.k8s.io/pause:3.10")


def test_a_tag_not_pushed_is_one_line(reg) -> None:
    with pytest.raises(registry.RegistryError) as e:
        _resolve(reg)("registry.example/lab/autoscaler:0.1.0")
    assert "HTTP 404 (no such repository or tag)" in str(e.value) and "\n" not in str(e.value)


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "images.yaml"
    shutil.copy(images.TABLE, path)
    yield path
    images.table.cache_clear()


def _all_served(reg, path, body=INDEX):
    for image in images.table(path):
        ref = registry.parse(image)
        reg.manifests[(ref.repository, ref.tag)] = body + image.encode()  # each its own manifest


def test_pin_images_records_every_digest_and_keeps_the_table_as_written(reg, table) -> None:
    before = table.read_text()
    _all_served(reg, table)
    lines = pin_images.pin_images(path=table, resolve=_resolve(reg))
    images.table.cache_clear()
    recorded = images.table(table)
    assert all(images.DIGEST.match(e["digest"]) for e in recorded.values())
    assert lines[-1].startswith(f"recorded in {table}")
    # only the digest values changed: comments, order and the other fields are as they were
    strip = lambda t: [line.split("digest:")[0] for line in t.splitlines()]  # noqa: E731
    assert strip(table.read_text()) == strip(before)
    manifest = "\n".join(f"  image: {i}@{e['digest']}" for i, e in recorded.items())
    assert images.unpinned(manifest) == []  # what the deploys' check_pinned accepts
    assert pin_images.pin_images(path=table, resolve=_resolve(reg)) == [
        f"every image in {table} has its digest; --refresh looks them up again"
    ]


def test_a_moved_tag_is_said_on_refresh(reg, table) -> None:
    _all_served(reg, table)
    pin_images.pin_images(path=table, resolve=_resolve(reg))
    images.table.cache_clear()
    reg.manifests[("pause", "3.10")] = b"{}moved"
    lines = pin_images.pin_images(path=table, resolve=_resolve(reg), refresh=True)
    moved = [line for line in lines if "was sha256:" in line]
    assert len(moved) == 1 and moved[0].startswith("registry.k8s.io/pause:3.10: sha256:")
    assert sum("(unchanged)" in line for line in lines) == len(images.table(table)) - 1


def test_one_image_unresolved_writes_nothing(reg, table) -> None:
    before = table.read_text()
    _all_served(reg, table)
    del reg.manifests[("flannel/flannel", "v0.26.1")]  # a tag the registry no longer serves
    with pytest.raises(UserError) as e:
        pin_images.pin_images(path=table, resolve=_resolve(reg))
    assert str(e.value).splitlines()[0].startswith("docker.io/flannel/flannel:v0.26.1: ")
    assert "nothing was written" in str(e.value)
    assert table.read_text() == before


def test_an_image_the_table_does_not_name_is_refused(table) -> None:
    with pytest.raises(UserError, match="not in"):
        pin_images.pin_images(path=table, only=["quay.io/nobody/nothing:1"], resolve=lambda i: "x")
