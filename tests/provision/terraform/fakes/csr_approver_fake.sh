#!/bin/bash
# kubectl and aws for the control plane's CSR approver (approve-csrs): `kubectl get csr -o json` prints
# $FAKE_STATE/csrs.json, `get nodes` $FAKE_STATE/nodes, the configmap research-node-names $FAKE_STATE/lab (missing:
# not found); `aws ec2 describe-instances --region R --filters Name=private-dns-name,Values=N ...` prints the ids of
# the lines "N ID" of $FAKE_STATE/ec2-R, or fails when $FAKE_STATE/ec2-fails exists. Every call goes to calls.
set -u
echo "$(basename "$0") $*" >>"$FAKE_STATE/calls"
case $(basename "$0") in
  kubectl)
    case " $* " in
      *" get csr "*) cat "$FAKE_STATE/csrs.json" ;;
      *" get nodes "*) cat "$FAKE_STATE/nodes" ;;
      *" get configmap research-node-names "*)
        [[ -e $FAKE_STATE/lab ]] || { echo 'configmaps "research-node-names" not found' >&2; exit 1; }
        cat "$FAKE_STATE/lab"
        ;;
    esac
    ;;
  aws)
    [[ -e $FAKE_STATE/ec2-fails ]] && { echo "An error occurred (RequestLimitExceeded)" >&2; exit 255; }
    region="" name=""
    while (($#)); do
      [[ $1 == --region ]] && region=$2
      [[ $1 == Name=private-dns-name,Values=* ]] && name=${1#Name=private-dns-name,Values=}
      shift
    done
    awk -v n="$name" '$1 == n {print $2}' "$FAKE_STATE/ec2-$region" 2>/dev/null
    ;;
esac
exit 0
