#!/bin/bash
# etcd snapshots and restores on a control-plane member (docs/operations.md, "etcd"). Installed by the user data
# as /usr/local/sbin/cluster-etcd with its settings in /etc/cluster-etcd.env; the timer cluster-etcd-backup.timer
# runs `cluster-etcd backup` every operations.backups.etcd_every_h hours; `invoke etcd-backup` and
# `invoke etcd-restore` run the other commands through Session Manager (SSM Run Command).
#
#   backup [--any-member]   snapshot (the etcd leader only, unless --any-member), upload it and the cluster's
#                           CA and service-account keys to S3 (SSE-KMS with the cluster key), record it in SSM
#   stop                    move the etcd and kube-apiserver static pods away; print this member's etcd name and
#                           peer URL (the restore needs every member's)
#   restore SNAPSHOT INITIAL_CLUSTER TOKEN
#                           download SNAPSHOT (s3://... or a file), check its sha256, restore it into a new data
#                           directory and swap it in; the old one is kept beside it
#   start                   put the static pods back and wait for etcd and the API
#   ship-audit              upload each rotated API audit log (audit-<time>.log beside audit.log) to
#                           s3://BUCKET/audit/<member instance>/ (SSE-KMS) and remove it once uploaded
#   restore-data FILE DIR NAME PEER_URL INITIAL_CLUSTER TOKEN
#                           the restore itself (etcd's "Restoring a cluster": each member restores the same snapshot
#                           with its own name and peer URL and the whole new membership)
#
# etcdctl and etcdutl come from the host when it has them (the tests run Debian's etcd), else from the cluster's own
# etcd image: `crictl exec` into the running etcd container (backup), `ctr run` of its image (restore, while etcd is
# stopped), so the tools always match the etcd version kubeadm deployed.
set -euo pipefail

env_file=${CLUSTER_ETCD_ENV:-/etc/cluster-etcd.env}
# shellcheck source=/dev/null
if [[ -r $env_file ]]; then . "$env_file"; fi
CLUSTER=${CLUSTER:?} REGION=${REGION:?}
BUCKET=${BUCKET:-} KMS_KEY_ARN=${KMS_KEY_ARN:-}
PKI=${PKI:-/etc/kubernetes/pki}
ENDPOINT=${ENDPOINT:-https://127.0.0.1:2379}
DATA_DIR=${DATA_DIR:-/var/lib/etcd}
MANIFESTS=${MANIFESTS:-/etc/kubernetes/manifests}
STATUS_PARAMETER=${STATUS_PARAMETER:-/$CLUSTER/etcd/last-backup}
METRIC_NAMESPACE=${METRIC_NAMESPACE:-$CLUSTER/etcd}
WAIT_S=${WAIT_S:-300}
held=$MANIFESTS.restore # where `stop` puts the static pods (outside kubelet's manifest directory)
cleanup=()
trap 'rm -f "${cleanup[@]}"' EXIT

log() { echo "cluster-etcd: $*" >&2; }
die() {
  log "$*"
  exit 1
}

etcdctl_run() {
  local certs=(--endpoints="$ENDPOINT" --cacert="$PKI/etcd/ca.crt" --cert="$PKI/etcd/server.crt"
    --key="$PKI/etcd/server.key")
  if command -v etcdctl >/dev/null; then
    ETCDCTL_API=3 etcdctl "${certs[@]}" "$@"
    return
  fi
  local id
  id=$(crictl ps --name '^etcd$' --state running -q | head -n 1)
  [[ -n $id ]] || die "no running etcd container on this member"
  crictl exec "$id" etcdctl "${certs[@]}" "$@"
}

# etcdutl (etcd 3.5+) or, on etcd 3.4, etcdctl's snapshot commands; else the etcd image of this member's manifest.
etcdutl_run() {
  if command -v etcdutl >/dev/null; then
    etcdutl "$@"
  elif command -v etcdctl >/dev/null; then
    ETCDCTL_API=3 etcdctl "$@"
  else
    local image manifest=$MANIFESTS/etcd.yaml
    [[ -f $manifest ]] || manifest=$held/etcd.yaml
    image=$(awk '$1 == "image:" {print $2; exit}' "$manifest")
    [[ -n $image ]] || die "no etcd image in $manifest"
    ctr -n k8s.io run --rm --mount "type=bind,src=/var/lib,dst=/var/lib,options=rbind:rw" \
      --mount "type=bind,src=/tmp,dst=/tmp,options=rbind:rw" "$image" "cluster-etcd-$$" etcdutl "$@"
  fi
}

# The leader takes the snapshot, so three members make one snapshot per period.
is_leader() {
  etcdctl_run endpoint status -w json | python3 -c '
import json, sys
s = json.load(sys.stdin)[0]["Status"]
sys.exit(0 if s["header"]["member_id"] == s["leader"] else 1)'
}

backup() {
  local any=${1:-} stamp file key sha revision size pki
  [[ -n $BUCKET && -n $KMS_KEY_ARN ]] || die "BUCKET and KMS_KEY_ARN are not set (/etc/cluster-etcd.env)"
  if [[ $any != --any-member ]] && ! is_leader; then
    log "not the etcd leader: the leader takes the snapshot"
    return 0
  fi
  stamp=$(date -u +%Y%m%dT%H%M%SZ)
  # inside the data directory: the etcd container mounts it, so `crictl exec` can write there too
  file=$DATA_DIR/cluster-etcd-$stamp.db
  pki=$(mktemp --suffix .tar.gz)
  cleanup+=("$file" "$pki")
  etcdctl_run snapshot save "$file" >/dev/null
  revision=$(etcdutl_run snapshot status "$file" -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)["revision"])')
  sha=$(sha256sum "$file" | cut -d' ' -f1)
  size=$(stat -c %s "$file")
  key=snapshots/$stamp-rev$revision.db
  aws s3 cp --only-show-errors "$file" "s3://$BUCKET/$key" --sse aws:kms --sse-kms-key-id "$KMS_KEY_ARN" \
    --metadata "sha256=$sha,revision=$revision,member=$(hostname)"
  # What a restored etcd needs to be served again: the cluster CA (every kubeconfig and kubelet trusts it), the
  # front proxy's and etcd's CAs, and the service-account keys (every token, and the OIDC documents: invoke
  # publish-oidc rebuilds those from sa.pub). Secret: encrypted with the cluster key, readable by the control plane
  # and operators only.
  tar -C "$PKI" -czf "$pki" ca.crt ca.key sa.key sa.pub front-proxy-ca.crt front-proxy-ca.key etcd/ca.crt etcd/ca.key
  aws s3 cp --only-show-errors "$pki" "s3://$BUCKET/pki/$stamp.tar.gz" --sse aws:kms --sse-kms-key-id "$KMS_KEY_ARN"
  aws ssm put-parameter --overwrite --type String --name "$STATUS_PARAMETER" --value \
    "{\"key\":\"$key\",\"pki\":\"pki/$stamp.tar.gz\",\"time\":\"$stamp\",\"revision\":$revision,\"bytes\":$size,\"sha256\":\"$sha\"}" \
    >/dev/null
  aws cloudwatch put-metric-data --namespace "$METRIC_NAMESPACE" --metric-name SnapshotSucceeded --value 1 \
    --unit Count >/dev/null
  echo "s3://$BUCKET/$key"
}

# this member's etcd name and peer URL, from its static pod (kubeadm writes both)
member_flags() {
  local manifest=$MANIFESTS/etcd.yaml
  [[ -f $manifest ]] || manifest=$held/etcd.yaml
  sed -n -e 's/^ *- --name=\(.*\)$/name=\1/p' -e 's/^ *- --initial-advertise-peer-urls=\(.*\)$/peer=\1/p' "$manifest"
}

containers_gone() {
  [[ -z $(crictl ps --name '^(etcd|kube-apiserver)$' --state running -q 2>/dev/null) ]]
}

wait_for() {
  local what=$1 waited=0
  shift
  until "$@"; do
    ((waited < WAIT_S)) || die "$what: not after ${WAIT_S}s"
    sleep 5
    waited=$((waited + 5))
  done
}

stop() {
  install -d -m 0700 "$held"
  member_flags
  for m in kube-apiserver etcd; do
    [[ -f $MANIFESTS/$m.yaml ]] && mv "$MANIFESTS/$m.yaml" "$held/$m.yaml"
  done
  wait_for "etcd and kube-apiserver to stop" containers_gone
  log "etcd and kube-apiserver stopped; their manifests are in $held"
}

restore_data() {
  local file=$1 dir=$2 name=$3 peer=$4 initial=$5 token=$6
  [[ ! -e $dir ]] || die "$dir exists; restore into a new directory"
  etcdutl_run snapshot restore "$file" --data-dir "$dir" --name "$name" --initial-cluster "$initial" \
    --initial-cluster-token "$token" --initial-advertise-peer-urls "$peer" >/dev/null
  log "restored $file into $dir as $name ($peer) of $initial"
}

restore() {
  local source=$1 initial=$2 token=$3 file want got name peer stamp
  eval "$(member_flags | sed 's/^\([a-z]*\)=\(.*\)$/\1="\2"/')"
  [[ -n ${name:-} && -n ${peer:-} ]] || die "cannot read this member's --name and --initial-advertise-peer-urls"
  [[ ! -f $MANIFESTS/etcd.yaml ]] || die "etcd is still in $MANIFESTS: run stop on every member first"
  stamp=$(date -u +%Y%m%dT%H%M%SZ)
  file=$(dirname "$DATA_DIR")/cluster-etcd-restore-$stamp.db
  cleanup+=("$file")
  if [[ $source == s3://* ]]; then
    aws s3 cp --only-show-errors "$source" "$file"
    local path=${source#s3://}
    want=$(aws s3api head-object --bucket "${path%%/*}" --key "${path#*/}" --query 'Metadata.sha256' --output text)
  else
    cp "$source" "$file"
    want=${SNAPSHOT_SHA256:-}
  fi
  got=$(sha256sum "$file" | cut -d' ' -f1)
  [[ -z $want || $want == None || $want == "$got" ]] || die "snapshot sha256 is $got, recorded $want: not restoring"
  restore_data "$file" "$DATA_DIR.restored-$stamp" "$name" "$peer" "$initial" "$token"
  [[ ! -e $DATA_DIR ]] || mv "$DATA_DIR" "$DATA_DIR.before-$stamp"
  mv "$DATA_DIR.restored-$stamp" "$DATA_DIR"
  log "the data directory before the restore is $DATA_DIR.before-$stamp"
}

healthy() { etcdctl_run endpoint health >/dev/null 2>&1; }

start() {
  for m in etcd kube-apiserver; do
    [[ -f $held/$m.yaml ]] && mv "$held/$m.yaml" "$MANIFESTS/$m.yaml"
  done
  wait_for "etcd to answer" healthy
  log "etcd answers on $ENDPOINT"
}

# The API audit log's rotated files (kube-apiserver names them audit-<time>.log), shipped off the member: a replaced
# member's log is in S3, not lost with its disk (issue 36). The file being written is left to its rotation.
ship_audit() {
  local dir=${AUDIT_LOG_DIR:-/var/log/kubernetes/audit} file id
  [[ -n $BUCKET ]] || { echo "cluster-etcd: no bucket: the audit log stays on this member" >&2; return 0; }
  id=${INSTANCE_ID:-$(cat /var/lib/cloud/data/instance-id 2>/dev/null || hostname)}
  for file in "$dir"/audit-*.log; do
    [[ -e $file ]] || continue
    gzip -f "$file"
    aws s3 cp --only-show-errors "$file.gz" "s3://$BUCKET/audit/$id/$(basename "$file").gz" --sse aws:kms \
      --sse-kms-key-id "$KMS_KEY_ARN" && rm -f "$file.gz"
  done
  for file in "$dir"/audit-*.log.gz; do # a gzip whose upload failed before
    [[ -e $file ]] || continue
    aws s3 cp --only-show-errors "$file" "s3://$BUCKET/audit/$id/$(basename "$file")" --sse aws:kms \
      --sse-kms-key-id "$KMS_KEY_ARN" && rm -f "$file"
  done
}

case ${1:-} in
  backup) backup "${2:-}" ;;
  ship-audit) ship_audit ;;
  stop) stop ;;
  restore) restore "$2" "$3" "$4" ;;
  start) start ;;
  restore-data) restore_data "$2" "$3" "$4" "$5" "$6" "$7" ;;
  *)
    echo "usage: $0 backup [--any-member] | stop | restore SNAPSHOT INITIAL_CLUSTER TOKEN | start | ship-audit" >&2
    exit 2
    ;;
esac
