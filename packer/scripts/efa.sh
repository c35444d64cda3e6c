#!/usr/bin/env bash
# The EFA kernel module and rdma-core (AWS's installer, --minimal: libfabric and MPI come with the training
# containers), where the spec has EFA types. The module binds only to an EFA device, so other types are unaffected.
set -euo pipefail
: "${EFA_INSTALLER_VERSION?empty: no EFA type in cluster.yaml}" "${EFA_INSTALLER_KEY_FINGERPRINT:?}"

if [[ -z "$EFA_INSTALLER_VERSION" ]]; then
  echo "efa: no EFA type in cluster.yaml; not installed"
  exit 0
fi
tmp=$(mktemp -d)
trap 'gpgconf --kill all 2>/dev/null || true; rm -rf "$tmp"' EXIT # the agent gpg started in $GNUPGHOME
base="https://efa-installer.amazonaws.com"
tarball="aws-efa-installer-${EFA_INSTALLER_VERSION}.tar.gz"
curl -fsSL --retry 5 -o "$tmp/key" "$base/aws-efa-installer.key"
curl -fsSL --retry 5 -o "$tmp/$tarball" "$base/$tarball"
curl -fsSL --retry 5 -o "$tmp/$tarball.sig" "$base/$tarball.sig"
export GNUPGHOME="$tmp/gnupg"
install -d -m 0700 "$GNUPGHOME"
gpg --batch --quiet --import "$tmp/key"
fingerprints=$(gpg --batch --with-colons --fingerprint)
if [[ "$fingerprints" != *"fpr:::::::::${EFA_INSTALLER_KEY_FINGERPRINT}:"* ]]; then
  echo "efa: the signing key is not AWS's ($EFA_INSTALLER_KEY_FINGERPRINT)" >&2
  exit 1
fi
gpg --batch --verify "$tmp/$tarball.sig" "$tmp/$tarball"
tar -xzf "$tmp/$tarball" -C "$tmp"
(cd "$tmp/aws-efa-installer" && ./efa_installer.sh -y --minimal)
