#!/usr/bin/env bash
# AWS CLI v2: worker user data reads the kubeadm join parameters from SSM with it, and Chef reads the VPN keys.
# The installer is taken only with a valid signature by AWS's CLI key, pinned by its fingerprint (AWS CLI User
# Guide, "Verify the integrity and authenticity of the downloaded installer files"; issue 26). The key is fetched
# by that fingerprint, and the signature must name it as its primary key: the fingerprint, not the keyserver, is
# what is trusted.
set -euo pipefail

# signed_by SIGNATURE FILE FINGERPRINT: SIGNATURE is a good signature of FILE by the key of FINGERPRINT (made by
# that key or one of its subkeys). GnuPG's VALIDSIG status line carries the signing key's fingerprint, eight more
# fields (dates, versions, algorithms, class) and last the primary key's fingerprint (GnuPG doc/DETAILS). An
# expired key still verifies: AWS extends its expiry, the fingerprint stays.
signed_by() {
  local status
  status=$(gpg --batch --status-fd 1 --verify "$1" "$2" 2>/dev/null || true)
  grep -Eq "^\[GNUPG:\] VALIDSIG ([^ ]+ ){9}$3\$" <<<"$status"
}

main() {
  : "${AWS_CLI_KEY_FINGERPRINT:?}"
  if aws --version 2>/dev/null | grep -q '^aws-cli/2\.'; then
    return 0
  fi
  local tmp zip
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064  # expanded now: $tmp is local to main
  trap "gpgconf --kill all 2>/dev/null || true; rm -rf '$tmp'" EXIT  # the agent and dirmngr gpg started there
  zip="https://awscli.amazonaws.com/awscli-exe-linux-$(uname -m).zip"
  curl -fsSL --retry 5 -o "$tmp/awscliv2.zip" "$zip"
  curl -fsSL --retry 5 -o "$tmp/awscliv2.zip.sig" "$zip.sig"
  export GNUPGHOME="$tmp/gnupg"
  install -d -m 0700 "$GNUPGHOME"
  gpg --batch --quiet --keyserver hkps://keyserver.ubuntu.com --recv-keys "$AWS_CLI_KEY_FINGERPRINT"
  if ! signed_by "$tmp/awscliv2.zip.sig" "$tmp/awscliv2.zip" "$AWS_CLI_KEY_FINGERPRINT"; then
    echo "aws-cli: $zip carries no valid signature by $AWS_CLI_KEY_FINGERPRINT; not installed" >&2
    return 1
  fi
  unzip -q "$tmp/awscliv2.zip" -d "$tmp"
  "$tmp/aws/install" --update
  aws --version
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
