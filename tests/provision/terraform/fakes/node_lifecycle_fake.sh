#!/bin/bash
# kubectl and aws for the control plane's node lifecycle (gc-nodes): `kubectl get nodes` prints $FAKE_STATE/nodes
# (the jsonpath lines), `aws ec2 describe-instances --region R` prints $FAKE_STATE/live-R (the instances EC2 still
# has, not terminated) or fails when that file is missing. Every call is logged to $FAKE_STATE/calls.
set -u
echo "$(basename "$0") $*" >>"$FAKE_STATE/calls"
case $(basename "$0") in
  kubectl)
    [[ " $* " == *" get nodes "* ]] && cat "$FAKE_STATE/nodes"
    ;;
  aws)
    region=""
    while (($#)); do [[ $1 == --region ]] && region=$2; shift; done
    cat "$FAKE_STATE/live-$region" 2>/dev/null || { echo "An error occurred (RequestLimitExceeded)" >&2; exit 255; }
    ;;
esac
exit 0
