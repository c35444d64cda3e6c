#!/usr/bin/env bash
# Fails the build (or the Chef run) when the driver module, the container runtime or kubelet is missing.
set -euo pipefail
: "${NVIDIA_DRIVER_FLAVOUR:?}" "${CONTAINERD_VERSION:?}" "${KUBERNETES_VERSION:?}" "${CUDA_VERSION:?}"

failures=0
fail() {
  echo "check: $*" >&2
  failures=$((failures + 1))
}

# The driver module must be built for the kernel the node boots next (the newest one installed).
kernel=$(find /lib/modules -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V | tail -n 1)
if ! license=$(modinfo -k "$kernel" -F license nvidia 2>/dev/null); then
  fail "no nvidia kernel module for kernel $kernel"
else
  case "$NVIDIA_DRIVER_FLAVOUR:$license" in
    open:*MIT* | proprietary:NVIDIA) ;;
    *) fail "nvidia module for $kernel has licence '$license', which is not the $NVIDIA_DRIVER_FLAVOUR flavour" ;;
  esac
fi
[[ -x "/usr/local/cuda-${CUDA_VERSION}/bin/nvcc" ]] || fail "CUDA $CUDA_VERSION is not installed"

if ! containerd --version 2>/dev/null | grep -Eq " v?${CONTAINERD_VERSION//./\\.} "; then
  fail "containerd $CONTAINERD_VERSION is not installed"
fi
command -v nvidia-container-runtime >/dev/null || fail "nvidia-container-runtime is not installed"
grep -q 'default_runtime_name = "nvidia"' /etc/containerd/config.toml 2>/dev/null ||
  fail "containerd does not use the nvidia runtime by default"

if ! kubelet --version 2>/dev/null | grep -qx "Kubernetes v${KUBERNETES_VERSION}"; then
  fail "kubelet $KUBERNETES_VERSION is not installed"
fi
command -v kubeadm >/dev/null || fail "kubeadm is not installed"
[[ "$(sysctl -n net.ipv4.ip_forward)" == 1 ]] || fail "IPv4 forwarding is off"
# /proc/modules rather than lsmod piped into grep -q: grep quits at the match and, under pipefail, lsmod's next write
# (SIGPIPE) would fail the pipeline and report a loaded module as missing.
grep -q '^br_netfilter ' /proc/modules || fail "br_netfilter is not loaded"
command -v aws >/dev/null || fail "the AWS CLI is not installed"
command -v mount.nfs4 >/dev/null || fail "the NFS client is not installed"

if ((failures)); then
  echo "check: $failures problem(s); the image is not usable" >&2
  exit 1
fi
echo "check: driver ($NVIDIA_DRIVER_FLAVOUR), CUDA $CUDA_VERSION, containerd $CONTAINERD_VERSION, kubelet $KUBERNETES_VERSION present"
