#!/usr/bin/env bash
# AWS CLI v2: worker user data reads the kubeadm join parameters from SSM with it, and Chef reads the VPN keys.
set -euo pipefail

if aws --version 2>/dev/null | grep -q '^aws-cli/2\.'; then
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
curl -fsSL --retry 5 -o "$tmp/awscliv2.zip" "https://awscli.amazonaws.com/awscli-exe-linux-$(uname -m).zip"
unzip -q "$tmp/awscliv2.zip" -d "$tmp"
"$tmp/aws/install" --update
aws --version
