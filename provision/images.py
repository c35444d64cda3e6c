"""Images by digest (issue 26): every container image a rendered manifest names is looked up in
provision/data/images.yaml, where its digest is recorded beside its tag, and written as ``<image>@<digest>``: a tag
can be moved to other content, a digest cannot (containerd verifies what it pulls against it).

``pin_docs`` is what every renderer runs on its objects (the add-ons, the gang scheduler, monitoring, storage, the
pod identity webhook, the autoscaler, tenancy). An image the table does not know, or whose digest is not
recorded yet (``null``), is rendered by its tag (so manifests can be reviewed and tested), and ``check_pinned``,
which every deploy task runs on the file it is about to apply, refuses it with one line naming the image and the
table. Images the spec names (``autoscaler.image``) may carry their digest there (``name:tag@sha256:...``).
tests/provision/test_images.py holds every rendered manifest's images to the table.

Third-party images are deployed from the lab's own ECR mirror (issue 36), never from their upstream registries:
with the cluster given, ``pin_docs`` names each by ``<registry>/<cluster>/mirror/<upstream registry>/<repository>``
(what `invoke mirror-images` pushes, provision/lab_images.py), by the digest the table pins (the copy keeps it), and
``check_pinned`` refuses a manifest naming any registry but the lab's. The one exception, documented in
docs/images.md: what is not in a rendered manifest (kubeadm's control-plane images and containerd's sandbox image,
which the bake and bootstrap pull).
"""

from __future__ import annotations

import os
import re
import sys
from functools import cache
from pathlib import Path

import yaml

from clusterspec.errors import UserError

TABLE = Path(__file__).resolve().parent / "data" / "images.yaml"
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_IMAGE_LINE = re.compile(r"^\s*(?:-\s+)?image:\s*[\"']?([^\"'\s]+)", re.M)


@cache
def table(path: Path = TABLE) -> dict[str, dict]:
    out = {}
    for i, entry in enumerate(yaml.safe_load(path.read_text()), 1):
        digest = entry.get("digest")
        if digest is not None and not DIGEST.match(str(digest)):
            raise UserError(
                f"{path}: entry {i} ({entry.get('image')}): digest {digest!r} is not sha256:<64 hex>"
            )
        out[entry["image"]] = entry
    return out


def is_third_party(entry: dict) -> bool:
    """A table entry the lab mirrors (every one but the lab's own images, whose source is cluster.yaml)."""
    return not str(entry.get("source", "")).startswith("cluster.yaml")


def mirror_name(image: str, mirror: str) -> str:
    """``<mirror>/<upstream registry>/<repository>:<tag>``: where `invoke mirror-images` copies ``image``."""
    from provision import registry

    ref = registry.parse(image)
    return f"{mirror}/{ref.registry}/{ref.repository}:{ref.tag}"


def mirror_prefix(cluster) -> str | None:
    """``<lab registry>/<cluster>/mirror`` (provision/lab_images.py), None while the lab's registry is not known
    (a render for review; every deploy then refuses the upstream names: ``check_pinned``)."""
    from provision import lab_images

    try:
        return f"{lab_images.registry_host(cluster)}/{cluster.name}/mirror"
    except UserError:
        return None


def pin(image: str, mirror: str | None = None) -> str:
    """``image@digest`` for a recorded digest, the image itself while none is recorded; a third-party image under
    ``mirror`` (the lab's ECR mirror) when one is given."""
    if "@sha256:" in image:
        return image
    entry = table().get(image) or {}
    name = mirror_name(image, mirror) if mirror and entry and is_third_party(entry) else image
    return f"{name}@{entry['digest']}" if entry.get("digest") else name


def upstream(ref: str) -> str:
    """The table's image for a rendered reference (a mirror's name mapped back; digest dropped)."""
    name = ref.split("@", 1)[0]
    if "/mirror/" not in name:
        return name
    prefix = name.split("/mirror/", 1)[0] + "/mirror"
    return next((image for image in table() if mirror_name(image, prefix) == name), name)


def pinned(names: list[str], cluster=None) -> dict[str, str]:
    """Short name (the table's ``name``) => the pinned reference (from the lab's mirror with ``cluster``)."""
    by_name = {e["name"]: e["image"] for e in table().values() if e.get("name")}
    mirror = mirror_prefix(cluster) if cluster is not None else None
    return {n: pin(by_name[n], mirror) for n in names}


def pin_docs(docs, cluster=None, *, _mirror: str | None = None):
    """Every ``image`` of every container of ``docs`` (objects, lists of them) pinned in place; returns docs. With
    ``cluster``, third-party images are named in the lab's ECR mirror."""
    mirror = mirror_prefix(cluster) if cluster is not None else _mirror
    if isinstance(docs, dict):
        for key, value in docs.items():
            if key == "image" and isinstance(value, str):
                docs[key] = pin(value, mirror)
            else:
                pin_docs(value, _mirror=mirror)
    elif isinstance(docs, list):
        for item in docs:
            pin_docs(item, _mirror=mirror)
    return docs


def unpinned(text: str) -> list[str]:
    """The images of a rendered manifest that carry no digest."""
    return sorted({m for m in _IMAGE_LINE.findall(text) if "@sha256:" not in m})


# The local stack (the real control plane's kwok and process-kubelet nodes: `make demo`, the demos and the tests)
# pulls no image from a registry; there, and only where this is set, images by tag are applied with a warning line
# instead of refused.
BY_TAG_ENV = "RESEARCH_CLUSTER_LOCAL_IMAGES_BY_TAG"


def foreign(text: str, host: str) -> list[str]:
    """The images of a rendered manifest that name a registry other than the lab's own ``host``."""
    return sorted({m for m in _IMAGE_LINE.findall(text) if not m.startswith(f"{host}/")})


def check_pinned(path: Path, text: str | None = None, *, cluster=None, in_registry: bool = True) -> None:
    """What a deploy task runs before applying ``path``: every image by digest and, with ``cluster``, from the
    lab's own registry (its ECR mirror) and, with ``in_registry``, already there at that digest (the order of day
    one: `invoke mirror-images` and `invoke push-autoscaler` before the deploys; provision/lab_images.py
    ``not_in_registry``), or one line and nothing applied. ``text``: the manifest itself where it is not a file of
    its own (flannel's, inside the control plane's root, which the same apply gives its repositories: no
    ``in_registry`` there). The local stack pulls no image (``BY_TAG_ENV``): nothing is asked of a registry there."""
    text = Path(path).read_text() if text is None else text
    if cluster is not None:
        from provision import lab_images

        host = lab_images.registry_host(cluster)
        outside = foreign(text, host)
        if outside:
            more = f" (and {len(outside) - 1} more)" if len(outside) > 1 else ""
            raise UserError(
                f"{path}: image {outside[0]}{more} is not in the lab's registry {host}: nothing was deployed; "
                f"deploys pull only the lab's own images and its ECR mirror (`invoke mirror-images`)"
            )
    missing = unpinned(text)
    if cluster is not None and in_registry and os.environ.get(BY_TAG_ENV) != "1" and not missing:
        from provision import lab_images

        absent = lab_images.not_in_registry(_IMAGE_LINE.findall(text), cluster)
        if absent:
            more = f" (and {len(absent) - 1} more)" if len(absent) > 1 else ""
            raise UserError(
                f"{path}: image {absent[0]}{more} is not in the lab's ECR yet: nothing was deployed; run "
                f"`{lab_images.producer(cluster, absent[0])}`, then deploy again"
            )
    if missing and os.environ.get(BY_TAG_ENV) == "1":
        print(f"warning: {path}: {len(missing)} image(s) by tag, not digest ({BY_TAG_ENV}=1: the local stack)",
              file=sys.stderr)  # fmt: skip
        return
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise UserError(
            f"{path}: image {missing[0]}{more} has no digest: nothing was deployed; run `invoke pin-images` "
            f"(it records every image's digest from its registry in {TABLE}), then deploy again"
        )
