#!/usr/bin/env bash
# The NVIDIA driver: the branch and kernel-module flavour that provision/drivers.py chose for the GPU models.
set -euo pipefail
: "${NVIDIA_DRIVER_BRANCH:?}" "${NVIDIA_DRIVER_FLAVOUR:?}" "${NVIDIA_DRIVER_PACKAGE:?}"
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

apt-get update -q
apt-get install -y -q --no-install-recommends "$NVIDIA_DRIVER_PACKAGE" "nvidia-utils-${NVIDIA_DRIVER_BRANCH}-server"
apt-mark hold "$NVIDIA_DRIVER_PACKAGE" "nvidia-utils-${NVIDIA_DRIVER_BRANCH}-server"
# The persistence daemon keeps the GPUs initialised between jobs.
systemctl enable nvidia-persistenced 2>/dev/null || true
