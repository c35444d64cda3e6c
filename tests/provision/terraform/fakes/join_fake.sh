#!/bin/bash
# One fake for the commands a node's join runs (curl for IMDSv2, aws, kubeadm, sleep, systemctl, ...), linked under
# each name. Logs every call to $FAKE_STATE/calls. IMDS answers from files under $FAKE_STATE/imds/<path> (a PUT to
# /latest/api/token returns a token; a request without the token header is refused, as IMDSv2-only does).
set -u
state=$FAKE_STATE
name=$(basename "$0")
echo "$name $*" >>"$state/calls"

nth() {
  local f="$state/count.${1//\//_}" n
  n=$(($(cat "$f" 2>/dev/null || echo 0) + 1))
  echo "$n" >"$f"
  echo "$n"
}

case $name in
  curl)
    url=${*: -1}
    case $url in
      */latest/api/token) [[ " $* " == *" -X PUT "* ]] || exit 22; echo "imds-token" ;;
      */latest/meta-data/*)
        [[ " $* " == *"X-aws-ec2-metadata-token: imds-token"* ]] || exit 22
        (($(nth imds) > ${FAKE_IMDS_FAILS:-0})) || exit 7
        cat "$state/imds/${url#*/latest/meta-data/}" 2>/dev/null || exit 22
        ;;
      *) exit 6 ;;
    esac
    ;;
  aws)
    case " $* " in
      *" --name /dlr/kubeadm/join-token "*) echo "abcdef.0123456789abcdef" ;;
      *" --name /dlr/kubeadm/ca-cert-hash "*) echo "sha256:5f1e" ;;
      *" sts get-caller-identity "*) echo "AROAEXAMPLENODEROLE01:$(cat "$state/imds/instance-id" 2>/dev/null)" ;;
      *" s3 cp "*" - s3://"*) cat >"$state/s3-put" ;;
      *) exit 254 ;;
    esac
    ;;
  kubeadm)
    if [[ ${1:-} == join ]]; then
      (($(nth join) > ${FAKE_JOIN_FAILS:-0})) || { echo "error execution phase preflight: fake" >&2; exit 1; }
    fi
    ;;
  *) ;;
esac
exit 0
