#!/usr/bin/env bash
# NFS client for EFS (NFS 4.1) and the site's NFS server. amazon-efs-utils is not installed: see docs/images.md.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

apt-get update -q
apt-get install -y -q --no-install-recommends nfs-common
