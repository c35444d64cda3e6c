#!/usr/bin/env bash
# Proves the GPU stack at the end of the bake and on every Chef converge of a worker: the driver is loaded at the
# pinned release and nvidia-smi lists the expected GPUs, the module loads under Secure Boot, the fabric manager runs
# where an NVSwitch is, EFA is bound where an EFA device is, the container runtime sees the GPUs, the versions of
# containerd, the toolkit and kubelet are the spec's (and the package lock's, where Chef installed from one).
# CHECK_ROOT (default /) prefixes the files read, for the tests' fake machines.
set -euo pipefail
: "${NVIDIA_DRIVER_FLAVOUR:?}" "${NVIDIA_DRIVER_VERSION:?}" "${CONTAINERD_VERSION:?}" "${KUBERNETES_VERSION:?}"
: "${CUDA_VERSION:?}" "${NVIDIA_CONTAINER_TOOLKIT_VERSION:?}" "${EXPECTED_GPUS:?number of GPUs of this machine}"
root="${CHECK_ROOT:-}"
: "${PACKAGE_LOCK:=$root/etc/cluster/package-lock}"
: "${MOK_CERT:=$root/var/lib/shim-signed/mok/MOK.der}"

failures=0
fail() {
  echo "check: $*" >&2
  failures=$((failures + 1))
}

# --- the driver: built, signed where Secure Boot needs it, loaded at the pinned release --------------------------
kernel=$(find "$root/lib/modules" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V | tail -n 1)
if ! license=$(modinfo -k "$kernel" -F license nvidia 2>/dev/null); then
  fail "no nvidia kernel module for kernel $kernel"
else
  case "$NVIDIA_DRIVER_FLAVOUR:$license" in
    open:*MIT* | proprietary:NVIDIA) ;;
    *) fail "nvidia module for $kernel has licence '$license', which is not the $NVIDIA_DRIVER_FLAVOUR flavour" ;;
  esac
  module_version=$(modinfo -k "$kernel" -F version nvidia 2>/dev/null || true)
  [[ "$module_version" == "$NVIDIA_DRIVER_VERSION" ]] ||
    fail "nvidia module for $kernel is $module_version, not the pinned $NVIDIA_DRIVER_VERSION"
fi

# Secure Boot: the firmware loads only modules signed by a key it trusts. DKMS signs with the machine's MOK key;
# until that key is enrolled (docs/images.md) the module does not load, whatever else is installed.
sb_state=$(mokutil --sb-state 2>/dev/null || true)
if [[ "$sb_state" == *"SecureBoot enabled"* ]]; then
  signer=$(modinfo -k "$kernel" -F signer nvidia 2>/dev/null || true)
  if [[ -z "$signer" ]]; then
    fail "Secure Boot is on and the nvidia module is unsigned: it cannot load (docs/images.md, Secure Boot)"
  elif [[ ! -f "$MOK_CERT" ]]; then
    fail "Secure Boot is on and there is no DKMS signing key ($MOK_CERT) to enrol (docs/images.md, Secure Boot)"
  elif [[ "$(mokutil --test-key "$MOK_CERT" 2>&1 || true)" != *"is already enrolled"* ]]; then
    fail "Secure Boot is on and the DKMS key $MOK_CERT that signed the nvidia module is not enrolled: run" \
      "mokutil --import $MOK_CERT and confirm at the next boot (docs/images.md, Secure Boot)"
  fi
fi

loaded=$(sed -n 's/^NVRM version:.* Kernel Module  *\([0-9.]*\) .*/\1/p' "$root/proc/driver/nvidia/version" 2>/dev/null || true)
if [[ -z "$loaded" ]]; then
  fail "the nvidia kernel module is not loaded (no $root/proc/driver/nvidia/version; see dmesg)"
elif [[ "$loaded" != "$NVIDIA_DRIVER_VERSION" ]]; then
  fail "the loaded nvidia module is $loaded, not the pinned $NVIDIA_DRIVER_VERSION (reboot after a driver change)"
fi

if ! smi=$(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>&1); then
  fail "nvidia-smi fails: ${smi//$'\n'/ }"
else
  gpus=$(grep -c . <<<"$smi" || true)
  ((gpus == EXPECTED_GPUS)) || fail "nvidia-smi lists $gpus GPU(s), expected $EXPECTED_GPUS"
  wrong=$(awk -F', *' -v v="$NVIDIA_DRIVER_VERSION" '$3 != v { print $3 }' <<<"$smi" | sort -u | tr '\n' ' ')
  [[ -z "$wrong" ]] || fail "nvidia-smi reports driver ${wrong% }, not the pinned $NVIDIA_DRIVER_VERSION"
fi

# --- what this hardware needs: fabric manager on NVSwitch machines, EFA on EFA machines -------------------------
if [[ "${NVIDIA_FABRICMANAGER:-0}" == 1 ]]; then
  fm_pkg="nvidia-fabricmanager-${NVIDIA_DRIVER_BRANCH:?}"
  fm_version=$(dpkg-query -W -f '${Version}' "$fm_pkg" 2>/dev/null || true)
  [[ "$fm_version" == "$NVIDIA_DRIVER_VERSION"-* ]] ||
    fail "$fm_pkg is ${fm_version:-not installed}, not the driver's $NVIDIA_DRIVER_VERSION (they must match exactly)"
fi
hw=$(command -v cluster-gpu-hardware || echo "$root/usr/local/sbin/cluster-gpu-hardware")
if [[ -x "$hw" ]]; then
  if "$hw" nvswitch >/dev/null; then
    systemctl is-active --quiet nvidia-fabricmanager ||
      fail "this machine has NVSwitches and nvidia-fabricmanager is not active (CUDA fails without it)"
  fi
  if "$hw" efa >/dev/null; then
    [[ -n "$(find "$root/sys/class/infiniband" -mindepth 1 -maxdepth 1 -name 'rdmap*' 2>/dev/null)" ]] ||
      fail "this machine has an EFA device and no EFA RDMA device is bound (efa module)"
  fi
else
  fail "cluster-gpu-hardware is not installed (gpu-hardware.sh)"
fi

# --- the container runtime sees the GPUs -----------------------------------------------------------------------
[[ -x "$root/usr/local/cuda-${CUDA_VERSION}/bin/nvcc" ]] || fail "CUDA $CUDA_VERSION is not installed"
if ! containerd --version 2>/dev/null | grep -Eq " v?${CONTAINERD_VERSION//./\\.} "; then
  fail "containerd $CONTAINERD_VERSION is not installed"
fi
config="$root/etc/containerd/config.toml"
grep -q '^version = 3' "$config" 2>/dev/null || fail "$config is not configuration version 3 (containerd 2.x)"
grep -q 'default_runtime_name = "nvidia"' "$config" 2>/dev/null ||
  fail "containerd does not use the nvidia runtime by default"
grep -q 'SystemdCgroup = true' "$config" 2>/dev/null || fail "containerd does not use the systemd cgroup driver"
# Two lines (version, commit): read them whole rather than pipe into grep -q (SIGPIPE under pipefail).
ctk=$(nvidia-ctk --version 2>/dev/null || true)
if [[ "$ctk" != *"version ${NVIDIA_CONTAINER_TOOLKIT_VERSION}"* ]]; then
  fail "the NVIDIA container toolkit is not $NVIDIA_CONTAINER_TOOLKIT_VERSION"
fi
# nvidia-container-cli is what the runtime hook uses to give a container its GPUs: it must see them all.
if ! info=$(nvidia-container-cli info 2>&1); then
  fail "nvidia-container-cli info fails: ${info//$'\n'/ }"
else
  seen=$(grep -c '^Device Index:' <<<"$info" || true)
  ((seen == EXPECTED_GPUS)) || fail "the container runtime sees $seen GPU(s), expected $EXPECTED_GPUS"
fi

# --- Kubernetes ------------------------------------------------------------------------------------------------
if ! kubelet --version 2>/dev/null | grep -qx "Kubernetes v${KUBERNETES_VERSION}"; then
  fail "kubelet $KUBERNETES_VERSION is not installed"
fi
command -v kubeadm >/dev/null || fail "kubeadm is not installed"
[[ "$(sysctl -n net.ipv4.ip_forward)" == 1 ]] || fail "IPv4 forwarding is off"
# /proc/modules rather than lsmod piped into grep -q: grep quits at the match and, under pipefail, lsmod's next write
# (SIGPIPE) would fail the pipeline and report a loaded module as missing.
grep -q '^br_netfilter ' "$root/proc/modules" || fail "br_netfilter is not loaded"
command -v aws >/dev/null || fail "the AWS CLI is not installed"
command -v mount.nfs4 >/dev/null || fail "the NFS client is not installed"

# --- the package lock (physical servers: the image's exact versions) ---------------------------------------------
if [[ -f "$PACKAGE_LOCK" ]]; then
  while read -r name version; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    have=$(dpkg-query -W -f '${Version}' "$name" 2>/dev/null || true)
    [[ -z "$have" || "$have" == "$version" ]] || fail "$name is $have, the image's package lock has $version"
  done <"$PACKAGE_LOCK"
fi

if ((failures)); then
  echo "check: $failures problem(s); this GPU node is not usable" >&2
  exit 1
fi
echo "check: driver $NVIDIA_DRIVER_VERSION ($NVIDIA_DRIVER_FLAVOUR) with $EXPECTED_GPUS GPU(s), CUDA $CUDA_VERSION," \
  "containerd $CONTAINERD_VERSION, toolkit $NVIDIA_CONTAINER_TOOLKIT_VERSION, kubelet $KUBERNETES_VERSION"
