#!/bin/bash
# One fake for every command the control-plane bootstrap runs (kubeadm, aws, curl, getent, sleep, systemctl,
# kubectl), linked under each name. Logs every call to $FAKE_STATE/calls; behaviour comes from FAKE_* variables
# (how many calls fail before one succeeds, which instances EC2 lists, which etcd members exist).
set -u
state=$FAKE_STATE
name=$(basename "$0")
echo "$name $*" >>"$state/calls"

# nth KEY: counts the calls for KEY, prints the count.
nth() {
  local f="$state/count.${1//\//_}" n
  n=$(($(cat "$f" 2>/dev/null || echo 0) + 1))
  echo "$n" >"$f"
  echo "$n"
}
arg() { # arg FLAG ARGS...: the value after FLAG
  local flag=$1
  shift
  while (($#)); do
    [[ $1 == "$flag" ]] && { echo "$2"; return; }
    shift
  done
}

case $name in
  sleep | systemctl | sysctl) ;;
  getent)
    (($(nth "dns-$2") > ${FAKE_DNS_FAILS:-0})) || exit 2
    echo "10.0.0.100 $2"
    ;;
  aws)
    param=$(arg --name "$@")
    file="$state/ssm/${param//\//_}"
    case "$1 $2" in
      "ssm get-parameter")
        if [[ $param == */control-plane/init && -n ${FAKE_INIT_PENDING_READS:-} ]] \
          && (($(nth init-read) > FAKE_INIT_PENDING_READS)); then
          echo "initialized by i-0member0 at 2026-01-01T00:00:00Z"
          exit 0
        fi
        [[ -f $file ]] || { echo "ParameterNotFound: $param" >&2; exit 254; }
        cat "$file"
        ;;
      "ssm put-parameter")
        mkdir -p "$state/ssm"
        arg --value "$@" >"$file"
        ;;
      "ssm delete-parameter")
        [[ -f $file ]] || { echo "ParameterNotFound: $param" >&2; exit 254; }
        rm -f "$file"
        ;;
      "ec2 describe-instances") echo "${FAKE_LIVE_IPS:-}" ;;
      "elbv2 register-targets" | "elbv2 deregister-targets") ;;
      "elbv2 describe-target-health") echo "${FAKE_TARGETS:-}" ;;
      "sts get-caller-identity") echo "AROAEXAMPLECONTROL001:i-0member" ;;
      "s3 cp") dest=${*: -1} && mkdir -p "$state/s3" && cat >"$state/s3/${dest##*/}" ;;
      *) echo "fake aws: unexpected $*" >&2; exit 2 ;;
    esac
    ;;
  kubeadm)
    case "$1 ${2:-}" in
      "certs certificate-key") echo "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210" ;;
      "init phase" | "join phase" | "reset -f") ;;
      "init --config")
        (($(nth init) > ${FAKE_INIT_FAILS:-0})) || { echo "error: timed out waiting for the API" >&2; exit 1; }
        ;;
      "join --config")
        (($(nth join) > ${FAKE_JOIN_FAILS:-0})) || { echo "error: etcd cluster is not healthy" >&2; exit 1; }
        ;;
      "token create")
        echo "kubeadm join api.research.internal:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:5f1e"
        ;;
      *) echo "fake kubeadm: unexpected $*" >&2; exit 2 ;;
    esac
    ;;
  curl)
    url=${*: -1}
    [[ $* == *" -d "* ]] && url=$(for a in "$@"; do [[ $a == http* ]] && echo "$a"; done)
    case $url in
      */latest/api/token) echo "imds-token" ;;
      */meta-data/instance-id) echo "i-0self" ;;
      */meta-data/local-ipv4) echo "$FAKE_SELF_IP" ;;
      */livez) (($(nth livez) > ${FAKE_API_FAILS:-0})) || exit 7 ;;
      *:2379/v3/cluster/member/list) echo "${FAKE_ETCD_MEMBERS:-{\}}" ;;
      *:2379/v3/cluster/member/remove) echo "{}" ;;
      *) echo "fake curl: unexpected $*" >&2; exit 2 ;;
    esac
    ;;
  kubectl)
    case "$*" in
      *" get nodes "*) printf '%s\n' "${FAKE_NODES:-}" ;;
      *" delete node "* | *" delete secret "*) ;;
      *) cat >"$state/kubectl-stdin" ;;
    esac
    ;;
  *) echo "fake: unknown command $name" >&2; exit 2 ;;
esac
