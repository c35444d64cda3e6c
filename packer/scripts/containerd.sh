#!/usr/bin/env bash
# containerd 2.x (Docker's containerd.io package) with the NVIDIA container toolkit as its default runtime.
set -euo pipefail
: "${CONTAINERD_VERSION:?}" "${NVIDIA_CONTAINER_TOOLKIT_VERSION:?}"
export DEBIAN_FRONTEND=noninteractive

# Docker's and NVIDIA's repositories, trusted by their keys' fingerprints: apt-repositories.sh.
apt-get update -q

# The exact upstream version from the spec, whatever packaging revision the repository gives it. awk reads to the
# end rather than exit at the match: under pipefail, apt-cache's next write would get SIGPIPE and fail the lookup.
# On a physical server Chef writes the image's package lock: the exact version the image has wins over the archive's
# newest build of the same release. awk reads to the end (no early exit): SIGPIPE under pipefail.
lock="${PACKAGE_LOCK:-/etc/cluster/package-lock}"
locked() { if [[ -f "$lock" ]]; then awk -v p="$1" '$1 == p { print $2 }' "$lock"; fi; }
pick() {
  local v
  v=$(locked "$1")
  if [[ -n "$v" ]]; then
    echo "$v"
    return
  fi
  apt-cache madison "$1" | awk -v v="$2" '!found && ($3 == v || index($3, v "-") == 1) { print $3; found = 1 }'
}
containerd_pkg=$(pick containerd.io "$CONTAINERD_VERSION")
toolkit_pkg=$(pick nvidia-container-toolkit "$NVIDIA_CONTAINER_TOOLKIT_VERSION")
if [[ -z "$containerd_pkg" || -z "$toolkit_pkg" ]]; then
  echo "containerd: containerd.io $CONTAINERD_VERSION or nvidia-container-toolkit $NVIDIA_CONTAINER_TOOLKIT_VERSION is not in the repositories" >&2
  exit 1
fi
# The toolkit's libraries at its version too, as NVIDIA's install guide pins them: left to apt they come at the
# repository's newest version (or fail to install where the toolkit depends on exactly its own version).
apt-get install -y -q --no-install-recommends "containerd.io=$containerd_pkg" \
  "nvidia-container-toolkit=$toolkit_pkg" "nvidia-container-toolkit-base=$toolkit_pkg" \
  "libnvidia-container-tools=$toolkit_pkg" "libnvidia-container1=$toolkit_pkg"
apt-mark hold containerd.io nvidia-container-toolkit nvidia-container-toolkit-base \
  libnvidia-container-tools libnvidia-container1

install -d -m 0755 /etc/containerd
# containerd 2.x writes configuration version 3 (CRI under plugins.'io.containerd.cri.v1.runtime'); the runc
# runtime uses the systemd cgroup driver, as the kubelet does (kubeadm's default cgroupDriver: systemd).
containerd config default >/etc/containerd/config.toml
if ! grep -q '^version = 3' /etc/containerd/config.toml; then
  echo "containerd: $(containerd --version) does not write configuration version 3 (containerd 2.x does)" >&2
  exit 1
fi
sed -i 's/SystemdCgroup = false/SystemdCgroup = true/' /etc/containerd/config.toml
grep -q 'SystemdCgroup = true' /etc/containerd/config.toml || {
  echo "containerd: the default configuration has no SystemdCgroup option to turn on" >&2
  exit 1
}
# The nvidia runtime (a copy of runc's options, so systemd cgroups too) as the default: pods see GPUs through the
# device plugin's NVIDIA_VISIBLE_DEVICES, and CDI specs are generated for the devices at boot.
nvidia-ctk runtime configure --runtime=containerd --set-as-default
systemctl enable containerd
systemctl restart containerd
