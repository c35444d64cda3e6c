#!/usr/bin/env bash
# kubeadm, kubelet and kubectl from pkgs.k8s.io, pinned to the spec's Kubernetes version and held.
set -euo pipefail
: "${KUBERNETES_VERSION:?}" "${KUBERNETES_MINOR:?}"
export DEBIAN_FRONTEND=noninteractive

# pkgs.k8s.io's channel for the minor, trusted by its key's fingerprint: apt-repositories.sh.
apt-get update -q

# On a physical server Chef writes the image's package lock: the exact version the image has wins over the archive's
# newest build of the same release. awk reads to the end (no early exit): SIGPIPE under pipefail.
lock="${PACKAGE_LOCK:-/etc/cluster/package-lock}"
locked() { if [[ -f "$lock" ]]; then awk -v p="$1" '$1 == p { print $2 }' "$lock"; fi; }
pkg=$(locked kubelet)
[[ -n "$pkg" ]] || pkg=$(apt-cache madison kubelet |
  awk -v v="$KUBERNETES_VERSION" '!found && index($3, v "-") == 1 { print $3; found = 1 }')
if [[ -z "$pkg" ]]; then
  echo "kubernetes: kubelet $KUBERNETES_VERSION is not in pkgs.k8s.io v$KUBERNETES_MINOR" >&2
  exit 1
fi
apt-mark unhold kubelet kubeadm kubectl >/dev/null 2>&1 || true
apt-get install -y -q --no-install-recommends "kubelet=$pkg" "kubeadm=$pkg" "kubectl=$pkg"
apt-mark hold kubelet kubeadm kubectl
# kubelet starts once kubeadm join has written its configuration.
systemctl enable kubelet
