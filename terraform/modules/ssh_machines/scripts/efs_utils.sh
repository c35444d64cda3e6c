#!/bin/bash
# amazon-efs-utils (the EFS mount helper with its TLS proxy, efs-proxy) built from source on an SSH machine:
# Ubuntu has no package. The source is taken at one commit and checked twice before anything of it runs (issue 26):
# git checks the commit (its id is the hash of the tree it names), and the SHA-256 of every tracked file's content
# must be the pinned checksum (git's ids are SHA-1). The proxy's Rust crates come from Cargo.lock, whose checksums
# cargo verifies (`cargo fetch --locked` refuses a lock that would change), and the build then runs offline.
# Usage: efs_utils.sh COMMIT SHA256 (terraform/modules/ssh_machines: efs_utils_commit, efs_utils_sha256).
set -euo pipefail
repo=${EFS_UTILS_REPOSITORY:-https://github.com/aws/efs-utils}

# tree_sha256 DIR: the SHA-256 over `sha256sum` of every tracked file of the checkout, in byte order of the paths.
tree_sha256() {
  (cd "$1" && git ls-files -z | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
}

# verified_source URL COMMIT SHA256 DIR: the repository at URL checked out at COMMIT into DIR, only when its content
# is SHA256; otherwise one line and DIR removed.
verified_source() {
  local url=$1 commit=$2 want=$3 dir=$4 got
  git init --quiet "$dir"
  if ! git -C "$dir" fetch --quiet --depth 1 "$url" "$commit" || ! git -C "$dir" checkout --quiet FETCH_HEAD; then
    echo "efs-utils: cannot fetch commit $commit from $url" >&2
    rm -rf "$dir"
    return 1
  fi
  if [[ $(git -C "$dir" rev-parse HEAD) != "$commit" ]]; then
    echo "efs-utils: $url gave $(git -C "$dir" rev-parse HEAD), not commit $commit; not built" >&2
    rm -rf "$dir"
    return 1
  fi
  got=$(tree_sha256 "$dir")
  if [[ $got != "$want" ]]; then
    echo "efs-utils: commit $commit from $url has content sha256 $got, not $want; not built" >&2
    rm -rf "$dir"
    return 1
  fi
}

main() {
  local commit=${1:?commit} sum=${2:?sha256} build
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends git binutils rustc cargo pkg-config libssl-dev gettext-base \
    cmake golang-go perl nfs-common stunnel4 python3
  build=$(mktemp -d)
  export CARGO_HOME="$build/cargo"
  verified_source "$repo" "$commit" "$sum" "$build/efs-utils"
  (cd "$build/efs-utils" && cargo fetch --locked --manifest-path src/proxy/Cargo.toml \
    && CARGO_NET_OFFLINE=true ./build-deb.sh >/dev/null)
  apt-get install -y -q "$build"/efs-utils/build/amazon-efs-utils*deb
  rm -rf "$build"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
