#!/usr/bin/env bash
# NVIDIA Fabric Manager, at exactly the driver's release, where the spec has NVSwitch types (p4d, p5): without it
# every CUDA process on an NVSwitch machine fails at start-up. It is enabled everywhere but runs only where an
# NVSwitch is on the PCI bus (ExecCondition), so the one image boots unchanged on a g4dn or a p4d.
set -euo pipefail
: "${NVIDIA_FABRICMANAGER:?1 when a cloud type has NVSwitch}" "${NVIDIA_DRIVER_BRANCH:?}" "${NVIDIA_DRIVER_VERSION:?}"
export DEBIAN_FRONTEND=noninteractive

if [[ "$NVIDIA_FABRICMANAGER" != 1 ]]; then
  echo "fabric-manager: no NVSwitch type in cluster.yaml; not installed"
  exit 0
fi
# On a physical server Chef writes the image's package lock: the exact version the image has wins over the archive's
# newest build of the same release. awk reads to the end (no early exit): SIGPIPE under pipefail.
lock="${PACKAGE_LOCK:-/etc/cluster/package-lock}"
locked() { if [[ -f "$lock" ]]; then awk -v p="$1" '$1 == p { print $2 }' "$lock"; fi; }
fm="nvidia-fabricmanager-${NVIDIA_DRIVER_BRANCH}"
pkg=$(locked "$fm")
[[ -n "$pkg" ]] || pkg=$(apt-cache madison "$fm" |
  awk -v v="$NVIDIA_DRIVER_VERSION" '!found && index($3, v "-") == 1 { print $3; found = 1 }')
if [[ -z "$pkg" ]]; then
  echo "fabric-manager: $fm $NVIDIA_DRIVER_VERSION is not in the archive; it must match the driver exactly" >&2
  exit 1
fi
apt-mark unhold "$fm" >/dev/null 2>&1 || true
apt-get install -y -q --no-install-recommends "$fm=$pkg"
apt-mark hold "$fm"

install -d -m 0755 /etc/systemd/system/nvidia-fabricmanager.service.d
cat >/etc/systemd/system/nvidia-fabricmanager.service.d/10-nvswitch-only.conf <<'CONF'
# Installed in the one GPU image; runs only on NVSwitch hardware (cluster-gpu-hardware, packer/scripts).
[Service]
ExecCondition=/usr/local/sbin/cluster-gpu-hardware nvswitch
CONF
systemctl daemon-reload
systemctl enable nvidia-fabricmanager
