"""What only a checkout of the repository has: the Terraform modules and roots, the Packer template and scripts,
the cookbook and the manifest templates. The installed package carries the spec model and its checks (what
``lab`` and ``autoscaler snapshot --spec`` use); everything that renders from those files needs the checkout, and
says so in one line instead of rendering nothing or failing with a traceback."""

from __future__ import annotations

from pathlib import Path

from clusterspec.errors import UserError

REPO = Path(__file__).resolve().parent.parent


def require(path: Path) -> Path:
    """PATH when it exists; otherwise a UserError naming it and what to do."""
    if not path.exists():
        raise UserError(
            f"{path}: not found: rendering Terraform, Packer, Chef or manifests needs a checkout of the repository "
            "(the installed package carries only the spec model); run it from a clone"
        )
    return path
