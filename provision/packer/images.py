"""Canonical's Ubuntu AMI names per release: what the template's ``source_ami_filter`` looks for."""

from __future__ import annotations

CANONICAL_OWNER = "099720109477"

# release -> (codename, the image family's path); 24.04 images moved to gp3 root volumes.
UBUNTU_RELEASES = {
    "20.04": ("focal", "hvm-ssd"),
    "22.04": ("jammy", "hvm-ssd"),
    "24.04": ("noble", "hvm-ssd-gp3"),
}


def source_ami_name(ubuntu: str, serial: str = "*") -> str:
    """``ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-*`` for 22.04 (a serial instead of ``*``)."""
    codename, family = UBUNTU_RELEASES[ubuntu]
    return f"ubuntu/images/{family}/ubuntu-{codename}-{ubuntu}-amd64-server-{serial}"
