"""A moto server on 127.0.0.1 that already holds a Canonical Ubuntu AMI: the local bake's stand-in for AWS."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from clusterspec.errors import UserError
from provision.packer.images import CANONICAL_OWNER, source_ami_name

FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_EC2_METADATA_DISABLED": "true",
}
SOURCE_AMI_ID = "ami-0b1d2e3f40516273a"


def ubuntu_source_ami(ubuntu: str) -> dict:
    """The Canonical image the template's ``source_ami_filter`` must find (moto's MOTO_AMIS_PATH format)."""
    return {
        "ami_id": SOURCE_AMI_ID,
        "name": source_ami_name(ubuntu, "20250101"),
        "description": f"Canonical, Ubuntu, {ubuntu} LTS, amd64",
        "owner_id": CANONICAL_OWNER,
        "public": True,
        "virtualization_type": "hvm",
        "architecture": "x86_64",
        "state": "available",
        "root_device_type": "ebs",
        "root_device_name": "/dev/sda1",
        "hypervisor": "xen",
        "creation_date": "2025-01-01T00:00:00.000Z",
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _moto_server() -> str:
    exe = Path(sys.executable).parent / "moto_server"
    if not exe.exists():
        raise UserError(f"{exe}: missing; install the dev dependencies with `make venv` (moto[server])")
    return str(exe)


@contextmanager
def moto_server(ubuntu: str, timeout_s: float = 20.0) -> Iterator[str]:
    """Start moto on a free loopback port with the Ubuntu source AMI registered; yield its endpoint URL."""
    with tempfile.TemporaryDirectory(prefix="moto-amis-") as tmp:
        amis = Path(tmp) / "amis.json"
        amis.write_text(json.dumps([ubuntu_source_ami(ubuntu)]))
        port = _free_port()
        endpoint = f"http://127.0.0.1:{port}"
        env = {**os.environ, "MOTO_AMIS_PATH": str(amis)}
        log_path = Path(tmp) / "moto.log"
        with log_path.open("w") as log:
            proc = subprocess.Popen(
                [_moto_server(), "-H", "127.0.0.1", "-p", str(port)], env=env, stdout=log, stderr=log
            )
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).close()
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise UserError(
                            f"moto server on {endpoint} did not start: {log_path.read_text()[-200:].strip()}"
                        ) from None
                    time.sleep(0.1)
            yield endpoint
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
