#!/usr/bin/env bash
# The NVIDIA driver at the exact release of cluster.yaml, in the kernel-module flavour clusterspec/drivers.py chose.
set -euo pipefail
: "${NVIDIA_DRIVER_BRANCH:?}" "${NVIDIA_DRIVER_FLAVOUR:?}" "${NVIDIA_DRIVER_PACKAGE:?}" "${NVIDIA_DRIVER_VERSION:?}"
export DEBIAN_FRONTEND=noninteractive

case "$NVIDIA_DRIVER_FLAVOUR" in
  open) [[ "$NVIDIA_DRIVER_PACKAGE" == *-open ]] ;;
  proprietary) [[ "$NVIDIA_DRIVER_PACKAGE" != *-open ]] ;;
  *) false ;;
esac || {
  echo "nvidia-driver: package $NVIDIA_DRIVER_PACKAGE does not match flavour $NVIDIA_DRIVER_FLAVOUR" >&2
  exit 1
}

# Keep the nouveau driver away from the GPUs.
cat >/etc/modprobe.d/blacklist-nouveau.conf <<'CONF'
blacklist nouveau
options nouveau modeset=0
CONF

# On a physical server Chef writes the image's package lock: the exact version the image has wins over the archive's
# newest build of the same release. awk reads to the end (no early exit): SIGPIPE under pipefail.
lock="${PACKAGE_LOCK:-/etc/cluster/package-lock}"
locked() { if [[ -f "$lock" ]]; then awk -v p="$1" '$1 == p { print $2 }' "$lock"; fi; }

apt-get update -q
# The exact release with whatever packaging revision Ubuntu gave it (<version>-0ubuntu0.<release>.1). An end-of-life
# branch becomes a transitional package at another version: it is not the release asked for, so this fails.
utils="nvidia-utils-${NVIDIA_DRIVER_BRANCH}-server"
pkg=$(locked "$utils")
[[ -n "$pkg" ]] || pkg=$(apt-cache madison "$NVIDIA_DRIVER_PACKAGE" |
  awk -v v="$NVIDIA_DRIVER_VERSION" '!found && index($3, v "-") == 1 { print $3; found = 1 }')
if [[ -z "$pkg" ]]; then
  echo "nvidia-driver: $NVIDIA_DRIVER_PACKAGE $NVIDIA_DRIVER_VERSION is not in the archive (apt-cache madison $NVIDIA_DRIVER_PACKAGE)" >&2
  exit 1
fi
apt-mark unhold "$NVIDIA_DRIVER_PACKAGE" "$utils" >/dev/null 2>&1 || true
apt-get install -y -q --no-install-recommends "$NVIDIA_DRIVER_PACKAGE=$pkg" "$utils=$pkg"
apt-mark hold "$NVIDIA_DRIVER_PACKAGE" "$utils"

# Every package of the branch must be at that one version (the metapackage pins its parts with "=").
# awk reads to the end (no early exit): under pipefail dpkg-query would otherwise get SIGPIPE.
stray=$(dpkg-query -W -f '${Package} ${Version}\n' "*nvidia*-${NVIDIA_DRIVER_BRANCH}-server*" 2>/dev/null |
  awk -v p="$pkg" '$2 != "" && $2 != p { print }')
if [[ -n "$stray" ]]; then
  echo "nvidia-driver: packages of branch $NVIDIA_DRIVER_BRANCH not at $pkg: $stray" >&2
  exit 1
fi
# Load it now when nothing else is loaded (the bake rebooted into the kernel it was built for). A server running
# another release keeps it until its reboot, and a refused module (Secure Boot) is reported by check.sh with why.
if [[ ! -e /proc/driver/nvidia/version ]]; then
  modprobe nvidia || echo "nvidia-driver: modprobe nvidia failed; check.sh reports why" >&2
fi
# The persistence daemon keeps the GPUs initialised between jobs.
systemctl enable nvidia-persistenced 2>/dev/null || true
