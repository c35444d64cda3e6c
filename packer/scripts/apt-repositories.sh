#!/usr/bin/env bash
# The third-party apt repositories the image installs from (Docker's containerd.io, NVIDIA's container toolkit,
# pkgs.k8s.io, NVIDIA's CUDA toolkit), each trusted only through the key of its vendor's published fingerprint
# (clusterspec/data/gpu_stack.yaml; issue 26): a key is trusted by its fingerprint, never by where it was
# downloaded from, and each repository is signed-by its own key alone. containerd.sh, kubernetes.sh and cuda.sh
# install from them. The gateway (a Kubernetes member without GPUs) gets the CUDA repository too: pinned below,
# nothing is installed from it there.
set -euo pipefail

# trusted_key SOURCE FINGERPRINT KEYRING: write KEYRING (binary, as apt's signed-by takes it) holding only the key
# whose primary fingerprint is FINGERPRINT, taken from SOURCE (a key file, armored or binary); refused when SOURCE
# holds no such primary key. GnuPG's --with-colons lists each key as "pub" then its "fpr", each subkey as "sub"
# then its own "fpr" (GnuPG doc/DETAILS): only a pub's fpr names the key.
trusted_key() {
  local src=$1 want=$2 keyring=$3 home got
  home=$(mktemp -d)
  got=$(gpg --homedir "$home" --batch --with-colons --import-options show-only --import "$src" 2>/dev/null |
    awk -F: '$1 == "fpr" && pub { print $10 } { pub = ($1 == "pub") }')
  if ! grep -qx "$want" <<<"$got"; then
    echo "$(basename "$0"): the key in $src is not $want (it holds: $(paste -sd ' ' <<<"${got:-nothing}")); not installed" >&2
    rm -rf "$home"
    return 1
  fi
  gpg --homedir "$home" --batch --quiet --import "$src" 2>/dev/null
  gpg --homedir "$home" --batch --export "$want" >"$keyring.new"
  mv "$keyring.new" "$keyring"
  chmod 0644 "$keyring"
  rm -rf "$home"
}

# repository NAME KEY_URL FINGERPRINT SOURCE_LINE: the key from KEY_URL as /etc/apt/keyrings/NAME.gpg, and
# SOURCE_LINE ("URI SUITE [COMPONENT]") signed by it alone.
repository() {
  local name=$1 url=$2 want=$3 line=$4 tmp
  tmp=$(mktemp)
  curl -fsSL --retry 5 -o "$tmp" "$url"
  trusted_key "$tmp" "$want" "/etc/apt/keyrings/$name.gpg" || {
    rm -f "$tmp"
    return 1
  }
  rm -f "$tmp"
  echo "deb [signed-by=/etc/apt/keyrings/$name.gpg] $line" >"/etc/apt/sources.list.d/$name.list"
}

main() {
  : "${UBUNTU_VERSION:?}" "${KUBERNETES_MINOR:?}"
  : "${DOCKER_APT_KEY_FINGERPRINT:?}" "${NVIDIA_CONTAINER_TOOLKIT_KEY_FINGERPRINT:?}"
  : "${KUBERNETES_APT_KEY_FINGERPRINT:?}" "${CUDA_REPO_KEY_FINGERPRINT:?}"
  export DEBIAN_FRONTEND=noninteractive
  # shellcheck source=/dev/null
  . /etc/os-release
  install -d -m 0755 /etc/apt/keyrings
  repository docker https://download.docker.com/linux/ubuntu/gpg "$DOCKER_APT_KEY_FINGERPRINT" \
    "https://download.docker.com/linux/ubuntu ${VERSION_CODENAME} stable"
  repository nvidia-container-toolkit https://nvidia.github.io/libnvidia-container/gpgkey \
    "$NVIDIA_CONTAINER_TOOLKIT_KEY_FINGERPRINT" "https://nvidia.github.io/libnvidia-container/stable/deb/\$(ARCH) /"
  repository kubernetes "https://pkgs.k8s.io/core:/stable:/v${KUBERNETES_MINOR}/deb/Release.key" \
    "$KUBERNETES_APT_KEY_FINGERPRINT" "https://pkgs.k8s.io/core:/stable:/v${KUBERNETES_MINOR}/deb/ /"

  # NVIDIA ships the CUDA repository's key in cuda-keyring; the package itself (its maintainer scripts, its own
  # sources entry) is never installed: only its key, once it is the one of the fingerprint. An older image or
  # server that had the package loses it, or apt would see two Signed-By values for one repository.
  local cuda tmp
  cuda="https://developer.download.nvidia.com/compute/cuda/repos/ubuntu${UBUNTU_VERSION//./}/$(uname -m)"
  tmp=$(mktemp -d)
  curl -fsSL --retry 5 -o "$tmp/cuda-keyring.deb" "$cuda/cuda-keyring_1.1-1_all.deb"
  dpkg-deb -x "$tmp/cuda-keyring.deb" "$tmp/unpacked"
  trusted_key "$tmp/unpacked/usr/share/keyrings/cuda-archive-keyring.gpg" "$CUDA_REPO_KEY_FINGERPRINT" \
    /etc/apt/keyrings/cuda.gpg || {
    rm -rf "$tmp"
    return 1
  }
  rm -rf "$tmp"
  if dpkg -s cuda-keyring >/dev/null 2>&1; then
    dpkg --purge cuda-keyring
  fi
  echo "deb [signed-by=/etc/apt/keyrings/cuda.gpg] $cuda/ /" >/etc/apt/sources.list.d/cuda.list
  # Only the toolkit comes from NVIDIA's CUDA repository; never a driver (the driver comes from nvidia-driver.sh).
  cat >/etc/apt/preferences.d/cuda-repository-no-drivers <<'CONF'
Package: nvidia-* libnvidia-* cuda-drivers*
Pin: origin developer.download.nvidia.com
Pin-Priority: -1
CONF
  # A repository whose index is not signed by its key fails here, not in the script that installs from it.
  apt-get update -q
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
