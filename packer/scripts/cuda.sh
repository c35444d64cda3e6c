#!/usr/bin/env bash
# The CUDA toolkit from NVIDIA's repository, without its driver (the driver comes from nvidia-driver.sh).
set -euo pipefail
: "${UBUNTU_VERSION:?}" "${CUDA_VERSION:?}"
export DEBIAN_FRONTEND=noninteractive

repo="ubuntu${UBUNTU_VERSION//./}"
arch=$(uname -m)
if ! dpkg -s cuda-keyring >/dev/null 2>&1; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  curl -fsSL --retry 5 -o "$tmp/cuda-keyring.deb" \
    "https://developer.download.nvidia.com/compute/cuda/repos/${repo}/${arch}/cuda-keyring_1.1-1_all.deb"
  dpkg -i "$tmp/cuda-keyring.deb"
fi
# Only the toolkit comes from NVIDIA's CUDA repository; never a driver.
cat >/etc/apt/preferences.d/cuda-repository-no-drivers <<'CONF'
Package: nvidia-* libnvidia-* cuda-drivers*
Pin: origin developer.download.nvidia.com
Pin-Priority: -1
CONF

apt-get update -q
toolkit="cuda-toolkit-${CUDA_VERSION//./-}"
apt-get install -y -q --no-install-recommends "$toolkit"
apt-mark hold "$toolkit"
cat >/etc/profile.d/cuda.sh <<CONF
export PATH=/usr/local/cuda-${CUDA_VERSION}/bin:\$PATH
CONF
echo "/usr/local/cuda-${CUDA_VERSION}/lib64" >/etc/ld.so.conf.d/cuda.conf
ldconfig
