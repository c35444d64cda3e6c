"""A fake GPU machine for the image scripts: a file tree (CHECK_ROOT, SYSFS_ROOT) and fake commands on PATH.

The commands answer as the real ones do, in the formats the scripts parse: ``nvidia-smi --query-gpu=... --format=
csv,noheader`` (one line per GPU), ``modinfo -F`` (one value), ``mokutil --sb-state`` / ``--test-key`` (their
messages), ``nvidia-container-cli info`` (a ``Device Index:`` block per GPU), ``/proc/driver/nvidia/version``.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import ROOT

SCRIPTS = ROOT / "packer" / "scripts"
KERNEL = "6.8.0-1021-aws"

# PCI functions as sysfs shows them: (vendor, device, class).
GPU_CLASS = "0x030200"  # 3D controller (data-centre GPUs); a Titan X shows 0x030000 (VGA)
NVSWITCH = ("0x10de", "0x1af1", "0x068000")
EFA = ("0x1d0f", "0xefa1", "0x020000")


@dataclass
class Machine:
    gpus: int = 4
    gpu_device: str = "0x20b0"
    gpu_class: str = GPU_CLASS
    nvswitches: int = 0
    efa_devices: int = 0
    efa_bound: bool = True
    driver: str = "580.178.04"  # what the module, nvidia-smi and the loaded driver report
    smi_gpus: int | None = None  # GPUs nvidia-smi lists (default: all)
    runtime_gpus: int | None = None  # GPUs nvidia-container-cli sees (default: all)
    module_loaded: bool = True
    license: str = "NVIDIA"
    signer: str = ""
    secure_boot: bool = False
    mok_enrolled: bool = False
    mok_key: bool = True
    fabricmanager_active: bool = False
    containerd_config: str = (
        'version = 3\ndefault_runtime_name = "nvidia"\n            SystemdCgroup = true\n'
    )
    installed: dict = field(default_factory=dict)  # dpkg-query: package -> version
    package_lock: dict | None = None


def _exe(path: Path, text: str) -> None:
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def build(tmp: Path, m: Machine) -> dict[str, str]:
    """Create the machine under ``tmp``; the environment to run a script on it with."""
    root, bin_dir = tmp / "root", tmp / "bin"
    bin_dir.mkdir(parents=True)
    (root / "lib/modules" / KERNEL).mkdir(parents=True)
    devices = root / "sys/bus/pci/devices"
    functions = [("0x10de", m.gpu_device, m.gpu_class)] * m.gpus + [NVSWITCH] * m.nvswitches
    functions += [EFA] * m.efa_devices + [("0x8086", "0x1237", "0x060000")]
    for i, (vendor, device, cls) in enumerate(functions):
        d = devices / f"0000:{i:02x}:00.0"
        d.mkdir(parents=True)
        for name, value in (("vendor", vendor), ("device", device), ("class", cls)):
            (d / name).write_text(value + "\n")
    if m.efa_devices and m.efa_bound:
        (root / "sys/class/infiniband/rdmap0s6").mkdir(parents=True)
    if m.module_loaded:
        (root / "proc/driver/nvidia").mkdir(parents=True)
        (root / "proc/driver/nvidia/version").write_text(
            f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {m.driver}  Wed Oct  1 00:00:00 UTC 2026\n"
            "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n"
        )
    (root / "proc").mkdir(exist_ok=True)
    (root / "proc/modules").write_text("br_netfilter 32768 0 - Live 0x0\noverlay 212992 0 - Live 0x0\n")
    (root / "etc/containerd").mkdir(parents=True)
    (root / "etc/containerd/config.toml").write_text(m.containerd_config)
    nvcc = root / "usr/local/cuda-12.9/bin/nvcc"
    nvcc.parent.mkdir(parents=True)
    _exe(nvcc, "exit 0\n")
    sbin = root / "usr/local/sbin"
    sbin.mkdir(parents=True)
    _exe(
        sbin / "cluster-gpu-hardware", f'SYSFS_ROOT="{root}/sys" exec bash "{SCRIPTS}/gpu-hardware.sh" "$@"\n'
    )
    if m.mok_key:
        (root / "var/lib/shim-signed/mok").mkdir(parents=True)
        (root / "var/lib/shim-signed/mok/MOK.der").write_bytes(b"\x30\x82")
    if m.package_lock is not None:
        (root / "etc/cluster").mkdir(parents=True)
        (root / "etc/cluster/package-lock").write_text(
            "".join(f"{k} {v}\n" for k, v in m.package_lock.items())
        )

    smi = m.gpus if m.smi_gpus is None else m.smi_gpus
    smi_lines = "".join(f"echo '{i}, NVIDIA A100-SXM4-40GB, {m.driver}'\n" for i in range(smi))
    _exe(bin_dir / "nvidia-smi", smi_lines or "echo 'No devices were found'\n")
    fields = {"license": m.license, "version": m.driver, "signer": m.signer}
    _exe(
        bin_dir / "modinfo",
        'while [ $# -gt 0 ]; do case "$1" in -F) shift; f="$1";; esac; shift; done\n'
        + 'case "$f" in\n'
        + "".join(f"  {k}) {'echo ' + repr(v) if v else 'echo'} ;;\n" for k, v in fields.items())
        + "esac\n",
    )
    _exe(
        bin_dir / "mokutil",
        'case "$1" in\n'
        f"  --sb-state) echo 'SecureBoot {'enabled' if m.secure_boot else 'disabled'}' ;;\n"
        f'  --test-key) echo "$2 {"is already enrolled" if m.mok_enrolled else "is not enrolled"}" ;;\n'
        "esac\n",
    )
    _exe(
        bin_dir / "systemctl",
        f'[ "$1" = is-active ] && [ "$3" = nvidia-fabricmanager ] && exit {0 if m.fabricmanager_active else 3}\n'
        "exit 0\n",
    )
    runtime = m.gpus if m.runtime_gpus is None else m.runtime_gpus
    _exe(
        bin_dir / "nvidia-container-cli",
        f"echo 'NVRM version:   {m.driver}'\necho 'CUDA version:   12.9'\n"
        + "".join(
            f"echo ''\necho 'Device Index:   {i}'\necho 'Model:          A100'\n" for i in range(runtime)
        ),
    )
    _exe(bin_dir / "containerd", "echo 'containerd containerd.io 2.2.6 85f8d8b'\n")
    _exe(bin_dir / "nvidia-ctk", "echo 'NVIDIA Container Toolkit CLI version 1.17.8'\necho 'commit: abc'\n")
    _exe(bin_dir / "kubelet", "echo 'Kubernetes v1.35.8'\n")
    _exe(bin_dir / "sysctl", "echo 1\n")
    installed = "".join(f"  {k}) printf %s {v!r} ;;\n" for k, v in m.installed.items())
    _exe(
        bin_dir / "dpkg-query",
        'for last; do :; done\ncase "$last" in\n' + installed + "  *) exit 1 ;;\nesac\n",
    )
    for name in ("kubeadm", "aws", "mount.nfs4", "nvidia-container-runtime"):
        _exe(bin_dir / name, "exit 0\n")
    return {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "CHECK_ROOT": str(root),
        "SYSFS_ROOT": str(root / "sys"),
        "NVIDIA_DRIVER_FLAVOUR": "proprietary",
        "NVIDIA_DRIVER_VERSION": "580.178.04",
        "CONTAINERD_VERSION": "2.2.6",
        "KUBERNETES_VERSION": "1.35.8",
        "CUDA_VERSION": "12.9",
        "NVIDIA_CONTAINER_TOOLKIT_VERSION": "1.17.8",
        "EXPECTED_GPUS": str(m.gpus),
    }
