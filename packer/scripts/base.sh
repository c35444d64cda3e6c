#!/usr/bin/env bash
# Base packages and hardening: security updates, time sync, SSH without passwords or root logins.
set -euo pipefail
: "${UBUNTU_VERSION:?set by Packer or Chef from cluster.yaml}"
export DEBIAN_FRONTEND=noninteractive

# shellcheck source=/dev/null
. /etc/os-release
if [[ "$VERSION_ID" != "$UBUNTU_VERSION" ]]; then
  echo "base: this is Ubuntu $VERSION_ID but cluster.yaml asks for $UBUNTU_VERSION" >&2
  exit 1
fi

# cloud-init may still be running apt on first boot; wait for it before using apt ourselves.
if command -v cloud-init >/dev/null; then
  cloud-init status --wait >/dev/null || true
fi

apt-get update -q
apt-get -y -q -o Dpkg::Options::=--force-confold upgrade
apt-get install -y -q --no-install-recommends \
  ca-certificates curl gnupg jq unzip chrony unattended-upgrades \
  apt-transport-https "linux-headers-$(uname -r)" dkms build-essential

# Hardening: keys only, no root logins, security updates applied automatically.
install -d -m 0755 /etc/ssh/sshd_config.d
cat >/etc/ssh/sshd_config.d/60-cluster-hardening.conf <<'CONF'
PermitRootLogin no
PasswordAuthentication no
KbdInteractiveAuthentication no
X11Forwarding no
MaxAuthTries 3
CONF
cat >/etc/apt/apt.conf.d/20auto-upgrades <<'CONF'
APT::Periodic::Update-Package-Lists "1";
APT::Periodic::Unattended-Upgrade "1";
CONF
# Never upgrade the pinned components behind the cluster's back (they are held as well).
cat >/etc/apt/apt.conf.d/51cluster-unattended <<'CONF'
Unattended-Upgrade::Package-Blacklist { "nvidia-"; "libnvidia-"; "cuda-"; "containerd"; "kube"; };
CONF
systemctl enable chrony
