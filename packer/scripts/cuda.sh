#!/usr/bin/env bash
# The CUDA toolkit from NVIDIA's repository, without its driver (the driver comes from nvidia-driver.sh).
set -euo pipefail
: "${CUDA_VERSION:?}"
export DEBIAN_FRONTEND=noninteractive

# NVIDIA's CUDA repository, trusted by its key's fingerprint and pinned to give no driver: apt-repositories.sh.
apt-get update -q
toolkit="cuda-toolkit-${CUDA_VERSION//./-}"
apt-get install -y -q --no-install-recommends "$toolkit"
apt-mark hold "$toolkit"
cat >/etc/profile.d/cuda.sh <<CONF
export PATH=/usr/local/cuda-${CUDA_VERSION}/bin:\$PATH
CONF
echo "/usr/local/cuda-${CUDA_VERSION}/lib64" >/etc/ld.so.conf.d/cuda.conf
ldconfig
