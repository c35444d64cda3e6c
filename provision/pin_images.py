"""``invoke pin-images``: record in provision/data/images.yaml the digest each image's tag names now, from its
registry (provision/registry.py; the lab's own ECR images with credentials, never on first use), so that the deploy tasks, which refuse an image by tag (provision/images.py
``check_pinned``), deploy it by digest from then on.

Only images without a digest are looked up (``--refresh``: all of them, a changed digest said in one line). Every
image is resolved before anything is written: one that cannot be (a registry out of reach, a tag not pushed yet)
is one line each, and the table is left as it was. The table keeps its comments and order; only the ``digest``
values change, and the file is replaced whole (a temporary file renamed over it).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from clusterspec.errors import UserError
from provision import images, registry


def pending(table: dict[str, dict], refresh: bool = False, only: list[str] | None = None) -> list[str]:
    names = list(table)
    if only:
        unknown = [i for i in only if i not in table]
        if unknown:
            raise UserError(
                f"--image {unknown[0]}: not in {images.TABLE}; the table names: {', '.join(names)}"
            )
        names = [n for n in names if n in only]
    return [n for n in names if refresh or only or not table[n].get("digest")]


def record(path: Path, digests: dict[str, str]) -> None:
    """Write ``digests`` (image -> sha256:...) into the table at ``path``, each on its image's line."""
    lines = path.read_text().splitlines(keepends=True)
    left = dict(digests)
    for i, line in enumerate(lines):
        m = re.match(r'^- \{image: "([^"]+)"', line)
        if m and m.group(1) in left:
            new, n = re.subn(
                r'digest: (?:null|"sha256:[0-9a-f]{64}")', f'digest: "{left.pop(m.group(1))}"', line
            )
            if n != 1:
                raise UserError(
                    f'{path}: line {i + 1}: no `digest: null` or `digest: "sha256:..."` to replace'
                )
            lines[i] = new
    if left:
        raise UserError(f"{path}: no line for {next(iter(left))}")
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text("".join(lines))
    os.replace(tmp, path)


def pin_images(
    *,
    refresh: bool = False,
    only: list[str] | None = None,
    path: Path = images.TABLE,
    resolve: Callable[[str], str] | None = None,
) -> list[str]:
    """Resolve and record; the lines to print. Raises UserError (nothing written) when any image fails. Images in
    the lab's ECR registry are read with its credentials (provision/lab_images.py ``resolve``), others anonymously
    as their public registries serve them."""
    from provision import lab_images

    resolve = resolve or lab_images.resolve
    table = images.table(path)
    todo = pending(table, refresh, only)
    if not todo:
        return [f"every image in {path} has its digest; --refresh looks them up again"]
    found, failed = {}, []
    for image in todo:
        try:
            found[image] = resolve(image)
        except registry.RegistryError as e:
            failed.append(str(e))
    if failed:
        raise UserError(
            "\n".join(failed)
            + f"\nnothing was written to {path}: {len(failed)} of {len(todo)} images unresolved"
        )
    out, changed = [], {}
    for image, digest in found.items():
        old = table[image].get("digest")
        if old == digest:
            out.append(f"{image}: {digest} (unchanged)")
            continue
        changed[image] = digest
        moved = f" (was {old}: the tag was moved; review before deploying)" if old else ""
        out.append(f"{image}: {digest}{moved}")
    record(path, changed)
    images.table.cache_clear()
    out.append(f"recorded in {path}; commit it, and the deploys use these digests")
    return out
