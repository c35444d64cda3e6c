"""A local Kubernetes API server backed by the cluster model (docs/emulator.md). Binds only to loopback."""

from autoscaler.emulator.kubeconfig import write_kubeconfig
from autoscaler.emulator.server import Emulator

__all__ = ["Emulator", "write_kubeconfig"]
