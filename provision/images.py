"""Images by digest (issue 26): every container image a rendered manifest names is looked up in
provision/data/images.yaml, where its digest is recorded beside its tag, and written as ``<image>@<digest>``: a tag
can be moved to other content, a digest cannot (containerd verifies what it pulls against it).

``pin_docs`` is what every renderer runs on its objects (the add-ons, the gang scheduler, monitoring, storage, the
pod identity webhook, the autoscaler, tenancy). An image the table does not know, or whose digest is not
recorded yet (``null``), is rendered by its tag (so manifests can be reviewed and tested), and ``check_pinned``,
which every deploy task runs on the file it is about to apply, refuses it with one line naming the image and the
table. Images the spec names (``autoscaler.image``) may carry their digest there (``name:tag@sha256:...``).
tests/provision/test_images.py holds every rendered manifest's images to the table.
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


def pin(image: str) -> str:
    """``image@digest`` for a recorded digest, the image itself while none is recorded."""
    if "@sha256:" in image:
        return image
    entry = table().get(image) or {}
    return f"{image}@{entry['digest']}" if entry.get("digest") else image


def pinned(names: list[str]) -> dict[str, str]:
    """Short name (the table's ``name``) => the pinned reference."""
    by_name = {e["name"]: e["image"] for e in table().values() if e.get("name")}
    return {n: pin(by_name[n]) for n in names}


def pin_docs(docs):
    """Every ``image`` of every container of ``docs`` (objects, lists of them) pinned in place; returns docs."""
    if isinstance(docs, dict):
        for key, value in docs.items():
            if key == "image" and isinstance(value, str):
                docs[key] = pin(value)
            else:
                pin_docs(value)
    elif isinstance(docs, list):
        for item in docs:
            pin_docs(item)
    return docs


def unpinned(text: str) -> list[str]:
    """The images of a rendered manifest that carry no digest."""
    return sorted({m for m in _IMAGE_LINE.findall(text) if "@sha256:" not in m})


# The local stack (the emulator: `make demo`, the demos and the tests) pulls no image from a registry; there,
# and only where this is set, images by tag are applied with a warning line instead of refused.
BY_TAG_ENV = "RESEARCH_CLUSTER_LOCAL_IMAGES_BY_TAG"


def check_pinned(path: Path, text: str | None = None) -> None:
    """What a deploy task runs before applying ``path``: every image by digest, or one line and nothing applied.
    ``text``: the manifest itself where it is not a file of its own (flannel's, inside the control plane's root)."""
    missing = unpinned(Path(path).read_text() if text is None else text)
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
