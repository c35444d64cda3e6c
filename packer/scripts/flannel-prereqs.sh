#!/usr/bin/env bash
# What flannel and kube-proxy need from the kernel: bridge netfilter, forwarding, overlay, no swap.
set -euo pipefail

cat >/etc/modules-load.d/kubernetes.conf <<'CONF'
overlay
br_netfilter
CONF
modprobe overlay
modprobe br_netfilter
cat >/etc/sysctl.d/90-kubernetes.conf <<'CONF'
net.bridge.bridge-nf-call-iptables = 1
net.bridge.bridge-nf-call-ip6tables = 1
net.ipv4.ip_forward = 1
CONF
sysctl --system >/dev/null

swapoff -a
sed -i '/\sswap\s/s/^\([^#]\)/#\1/' /etc/fstab
