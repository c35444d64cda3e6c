#!/usr/bin/env bash
# Base packages and hardening: apt that waits for its lock, time sync, SSH without passwords or root logins,
# unattended upgrades off on Kubernetes workers (a driver or kubelet change under a running job loses the job).
set -euo pipefail
: "${UBUNTU_VERSION:?set by Packer or Chef from cluster.yaml}" "${UNATTENDED_UPGRADES:?0 on workers, 1 elsewhere}"
: "${APT_LOCK_TIMEOUT_S:=600}"
export DEBIAN_FRONTEND=noninteractive

# shellcheck source=/dev/null
. /etc/os-release
if [[ "$VERSION_ID" != "$UBUNTU_VERSION" ]]; then
  echo "base: this is Ubuntu $VERSION_ID but cluster.yaml asks for $UBUNTU_VERSION" >&2
  exit 1
fi

# Every later apt/dpkg call (these scripts, cloud-init, Chef) waits up to the timeout for the dpkg lock instead of
# failing at once (apt >= 1.9.11: DPkg::Lock::Timeout).
cat >/etc/apt/apt.conf.d/10cluster-lock-timeout <<CONF
DPkg::Lock::Timeout "${APT_LOCK_TIMEOUT_S}";
CONF

# cloud-init runs apt on first boot: wait for it, with a bound (a wedged cloud-init fails the bake, not hangs it).
if command -v cloud-init >/dev/null; then
  rc=0
  timeout "$APT_LOCK_TIMEOUT_S" cloud-init status --wait >/dev/null || rc=$?
  if ((rc == 124)); then
    echo "base: cloud-init still running after ${APT_LOCK_TIMEOUT_S}s" >&2
    exit 1
  fi
fi
# The first-boot apt timers (apt-daily, apt-daily-upgrade) start apt behind our back: stop them, and wait (bounded)
# for a run already in progress to finish.
systemctl stop apt-daily.timer apt-daily-upgrade.timer 2>/dev/null || true
timeout "$APT_LOCK_TIMEOUT_S" systemd-run --quiet --wait --property=After=apt-daily.service \
  --property=After=apt-daily-upgrade.service --property=After=unattended-upgrades.service /bin/true ||
  {
    echo "base: apt-daily or unattended-upgrades still running after ${APT_LOCK_TIMEOUT_S}s" >&2
    exit 1
  }

apt-get update -q
apt-get -y -q -o Dpkg::Options::=--force-confold upgrade
apt-get install -y -q --no-install-recommends \
  ca-certificates curl gnupg jq unzip chrony unattended-upgrades mokutil pciutils \
  apt-transport-https "linux-headers-$(uname -r)" dkms build-essential

# Hardening: keys only, no root logins.
install -d -m 0755 /etc/ssh/sshd_config.d
cat >/etc/ssh/sshd_config.d/60-cluster-hardening.conf <<'CONF'
PermitRootLogin no
PasswordAuthentication no
KbdInteractiveAuthentication no
X11Forwarding no
MaxAuthTries 3
CONF

if [[ "$UNATTENDED_UPGRADES" == 1 ]]; then
  cat >/etc/apt/apt.conf.d/20auto-upgrades <<'CONF'
APT::Periodic::Update-Package-Lists "1";
APT::Periodic::Unattended-Upgrade "1";
CONF
  systemctl enable --now apt-daily.timer apt-daily-upgrade.timer
else
  # Workers change only through a new image (cloud) or a drained Chef converge (physical): no upgrade behind a job.
  cat >/etc/apt/apt.conf.d/20auto-upgrades <<'CONF'
APT::Periodic::Update-Package-Lists "0";
APT::Periodic::Unattended-Upgrade "0";
CONF
  systemctl disable --now apt-daily.timer apt-daily-upgrade.timer unattended-upgrades.service 2>/dev/null || true
fi
# Never upgrade the pinned components behind the cluster's back, wherever upgrades run (they are held as well).
cat >/etc/apt/apt.conf.d/51cluster-unattended <<'CONF'
Unattended-Upgrade::Package-Blacklist { "nvidia-"; "libnvidia-"; "cuda-"; "containerd"; "kube"; "efa"; };
CONF
systemctl enable chrony
