# shellcheck shell=bash
# Control-plane bootstrap: plain bash functions, embedded verbatim in the user data after the configuration
# block of templates/control_plane.sh.tftpl (which calls `main`). Also installed as
# /usr/local/sbin/cluster-control-plane: the hourly timer runs `cluster-control-plane publish`, the node
# lifecycle timer `cluster-control-plane gc-nodes`, and `serve-joins` and `approve-csrs` on their own timers, every
# minute.
#
# The control-plane certificates (the cluster CA's and etcd's keys) leave a member only while another one joins
# (issue 26): a joining member writes ${STATUS_PREFIX%/status}/join-request; a joined member, on its next minute,
# uploads the certificates (kubeadm's kubeadm-certs Secret, encrypted with a fresh certificate key) and writes
# that key to ${JOIN_PREFIX}/certificate-key; the joiner downloads them, joins, and deletes the request, the key
# and the Secret. Without a request (or past its JOIN_WINDOW_S) the members delete key and Secret themselves.
# The worker join token lives 2 hours and a new one is published every hour.
#
# Configuration (set by the template): CLUSTER REGION MEMBER ENDPOINT API_HOST LB_DNS_NAME KUBERNETES_VERSION
# POD_CIDR SERVICE_CIDR JOIN_PREFIX STATUS_PREFIX INIT_PARAMETER KMS_KEY_ARN FLANNEL_MANIFEST
# TARGET_GROUP_ARN NODE_KEYS_BUCKET.
# Tunables (environment; the tests shorten them): CP_ROOT prefixes every path written, CP_WAIT_S bounds each
# wait (DNS, member 0's init), CP_ATTEMPTS bounds init/join attempts, CP_BACKOFF_MAX_S caps the back-off,
# CP_NODE_JOIN_WINDOW_S how long after its launch an instance may ask for its node identity (approve-csrs),
# CP_NODE_NAMES_NAMESPACE where approve-csrs reads the lab servers' names (kube-system).
#
# Order, member 0 (only while ${INIT_PARAMETER} says "pending", i.e. on a cluster Terraform just created):
#   api.<domain> and the load balancer resolve -> kubeadm init (retried with back-off, reset between attempts)
#   -> certificate key, join token, CA hash to SSM -> the API answers through the load balancer -> flannel
#   -> INIT_PARAMETER = initialized.
# Every other member (and a replaced member 0): INIT_PARAMETER = initialized -> api.<domain> resolves ->
#   per attempt: read the join parameters, the API answers, download the certificates, remove etcd members
#   whose instances no longer exist, kubeadm join (retried with back-off, reset between attempts).
# Each step is reported to the SSM String ${STATUS_PREFIX}/member-<i> (`invoke control-plane-status`), a
# final failure as state "failed" and a non-zero exit (cloud-init marks the user data failed).

root=${CP_ROOT:-}
wait_s=${CP_WAIT_S:-1800}
join_window_s=${CP_JOIN_WINDOW_S:-1800}
node_join_window_s=${CP_NODE_JOIN_WINDOW_S:-3600}
node_names_ns=${CP_NODE_NAMES_NAMESPACE:-kube-system}
token_ttl=${CP_TOKEN_TTL:-2h}
attempts=${CP_ATTEMPTS:-8}
backoff_max=${CP_BACKOFF_MAX_S:-300}
conf_dir=$root/etc/kubernetes/bootstrap
attempt=0
instance_id=unknown
self_ip=unknown
error=""
init=""
live_ips=""

log() { echo "control-plane[$MEMBER]: $*" >&2; }

imds() {
  local token
  token=$(curl -fsS --max-time 5 -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 300' \
    http://169.254.169.254/latest/api/token) || return 1
  curl -fsS --max-time 5 -H "X-aws-ec2-metadata-token: $token" "http://169.254.169.254/latest/meta-data/$1"
}

ssm_get() { aws ssm get-parameter --with-decryption --name "$1" --query Parameter.Value --output text; }

put_secret() {
  aws ssm put-parameter --overwrite --type SecureString --key-id "$KMS_KEY_ARN" \
    --name "$JOIN_PREFIX/$1" --value "$2" >/dev/null
}

# report STATE MESSAGE: the member's status as one JSON line in SSM (String; no secret in it) and on the console.
report() {
  local state=$1 message=${2//[\"\\]/\'} value
  message=${message//[$'\t\r\n']/ }
  value=$(printf '{"state":"%s","member":%d,"instance":"%s","ip":"%s","attempt":%d,"time":"%s","message":"%s"}' \
    "$state" "$MEMBER" "$instance_id" "$self_ip" "$attempt" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "${message:0:400}")
  log "$state: $message"
  aws ssm put-parameter --overwrite --type String --name "$STATUS_PREFIX/member-$MEMBER" --value "$value" \
    >/dev/null || log "could not write $STATUS_PREFIX/member-$MEMBER"
}

fail() {
  report failed "$1"
  (echo "control-plane[$MEMBER]: FAILED: $1" >"$root/dev/console") 2>/dev/null || true
  exit 1
}

# wait_until WHAT COMMAND...: polls COMMAND with back-off (2 s doubling to 30 s) for at most CP_WAIT_S seconds.
wait_until() {
  local what=$1 waited=0 delay=2
  shift
  until "$@"; do
    ((waited < wait_s)) || return 1
    log "waiting for $what (${waited}s so far)"
    sleep "$delay"
    waited=$((waited + delay))
    delay=$((delay * 2 > 30 ? 30 : delay * 2))
  done
}

# backoff N: seconds to wait after failed attempt N (10, 20, 40, ... capped at CP_BACKOFF_MAX_S).
backoff() {
  local d=$((10 * 2 ** ($1 - 1)))
  echo $((d > backoff_max ? backoff_max : d))
}

resolves() { getent hosts "$1" >/dev/null; }
api_up() { curl -fsk --max-time 5 "https://$ENDPOINT/livez" >/dev/null 2>&1; }
init_state() { ssm_get "$INIT_PARAMETER" 2>/dev/null; }
initialized() { [[ $(init_state) == initialized* ]]; }
read_init_state() { init=$(init_state); }

# IAM roles for service accounts (docs/researchers.md): tokens carry the S3-published issuer that AWS STS trusts;
# the in-cluster default stays accepted, so tokens issued before keep working (kube-apiserver signs with the first).
service_account_args() {
  [[ -n $SA_ISSUER ]] || return 0
  cat <<EOF
  - {name: service-account-issuer, value: "$SA_ISSUER"}
  - {name: service-account-issuer, value: "https://kubernetes.default.svc.cluster.local"}
  - {name: service-account-jwks-uri, value: "$SA_ISSUER/keys.json"}
EOF
}

# etcd encryption at rest (issue 36): the key is made on member 0 at init, kept in SSM (SecureString) for joiners.
ENCRYPTION_DIR=/etc/kubernetes/encryption
AUDIT_DIR=/etc/kubernetes/audit
AUDIT_LOG_DIR=/var/log/kubernetes/audit

write_encryption_config() { # KEY
  install -d -m 0700 "$root$ENCRYPTION_DIR"
  install -m 0600 /dev/null "$root$ENCRYPTION_DIR/config.yaml"
  cat >"$root$ENCRYPTION_DIR/config.yaml" <<EOF
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - secretbox:
          keys:
            - {name: key1, secret: "$1"}
      - identity: {}
EOF
}

setup_encryption() {
  local key
  if key=$(ssm_get "$JOIN_PREFIX/encryption-key" 2>/dev/null) && [[ -n $key && $key != None ]]; then
    :
  elif [[ $MEMBER == 0 && $init == pending ]]; then
    key=$(head -c 32 /dev/urandom | base64 -w0) && put_secret encryption-key "$key" || return 1
  else # a cluster initialised before issue 36: its kubeadm-config names no encryption (docs/operations.md)
    log "no encryption key: a cluster from before issue 36"
    return 0
  fi
  write_encryption_config "$key"
}

# The API audit policy (issue 36); `cluster-etcd ship-audit` uploads the rotated files to S3.
write_audit_policy() {
  install -d -m 0755 "$root$AUDIT_DIR"
  install -d -m 0700 "$root$AUDIT_LOG_DIR"
  cat >"$root$AUDIT_DIR/policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: None
    nonResourceURLs: [/healthz*, /livez*, /readyz*, /version, /metrics]
  - {level: None, resources: [{group: coordination.k8s.io, resources: [leases]}], verbs: [get, update, watch]}
  - level: Metadata
    resources:
      - {group: "", resources: [secrets, configmaps, serviceaccounts/token]}
      - {group: authentication.k8s.io, resources: [tokenreviews]}
  - level: RequestResponse
    resources:
      - {group: rbac.authorization.k8s.io}
      - {group: certificates.k8s.io}
      - {group: admissionregistration.k8s.io}
      - {group: "", resources: [pods/exec, pods/attach, pods/portforward, namespaces]}
    verbs: [create, update, patch, delete, deletecollection]
  - level: Request
    verbs: [create, update, patch, delete, deletecollection]
  - level: Metadata
EOF
}

apiserver_config() {
  cat <<EOF
  extraArgs:
$(service_account_args)
  - {name: encryption-provider-config, value: "$ENCRYPTION_DIR/config.yaml"}
  - {name: audit-policy-file, value: "$AUDIT_DIR/policy.yaml"}
  - {name: audit-log-path, value: "$AUDIT_LOG_DIR/audit.log"}
  - {name: audit-log-maxsize, value: "50"}
  - {name: audit-log-maxbackup, value: "20"}
  - {name: audit-log-maxage, value: "7"}
  extraVolumes:
  - {name: encryption, hostPath: "$ENCRYPTION_DIR", mountPath: "$ENCRYPTION_DIR", readOnly: true, pathType: Directory}
  - {name: audit-policy, hostPath: "$AUDIT_DIR", mountPath: "$AUDIT_DIR", readOnly: true, pathType: Directory}
  - {name: audit-log, hostPath: "$AUDIT_LOG_DIR", mountPath: "$AUDIT_LOG_DIR", pathType: DirectoryOrCreate}
EOF
}

write_init_config() {
  install -d -m 0700 "$conf_dir"
  install -m 0600 /dev/null "$conf_dir/init.yaml"
  cat >"$conf_dir/init.yaml" <<EOF
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: "v${KUBERNETES_VERSION#v}"
controlPlaneEndpoint: "$ENDPOINT"
apiServer:
  certSANs: ["$API_HOST", "$LB_DNS_NAME"]
$(apiserver_config)
networking:
  podSubnet: "$POD_CIDR"
  serviceSubnet: "$SERVICE_CIDR"
$SCHEDULER_KUBEADM
EOF
}

# The scheduler profile (provision/scheduler.py) on every member: kubeadm's ClusterConfiguration (kept in the
# cluster's kubeadm-config, so joining members' static pods get the same flags) points kube-scheduler at it.
write_scheduler_config() {
  install -d -m 0755 "$root$(dirname "$SCHEDULER_FILE")"
  printf '%s\n' "$SCHEDULER_CONFIG" >"$root$SCHEDULER_FILE"
}

write_join_config() {
  install -d -m 0700 "$conf_dir"
  install -m 0600 /dev/null "$conf_dir/join.yaml"
  cat >"$conf_dir/join.yaml" <<EOF
apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: "$ENDPOINT"
    token: "$1"
    caCertHashes: ["$2"]
controlPlane:
  certificateKey: "$3"
EOF
}

# The worker join token and CA hash: a token of CP_TOKEN_TTL (2 h) created and published on every hourly run,
# so a token read from SSM is at most an hour old and dead an hour later (kubeadm deletes expired tokens).
# Runs hourly on every member; the certificates are not uploaded here (serve_joins, only while a member joins).
publish_join_parameters() {
  local join token hash
  join=$(kubeadm token create --ttl "$token_ttl" --description "worker join (published to SSM)" --print-join-command) \
    || return 1
  token=$(awk '{for (i = 1; i < NF; i++) if ($i == "--token") print $(i + 1)}' <<<"$join")
  hash=$(awk '{for (i = 1; i < NF; i++) if ($i == "--discovery-token-ca-cert-hash") print $(i + 1)}' <<<"$join")
  [[ -n $token && $hash == sha256:* ]] || { log "unexpected join command from kubeadm"; return 1; }
  put_secret join-token "$token" && put_secret ca-cert-hash "$hash"
}

join_request_parameter() { echo "${STATUS_PREFIX%/status}/join-request"; }

# No member joining: no certificate key in SSM and no kubeadm-certs Secret in the cluster.
withdraw_certificates() {
  aws ssm delete-parameter --name "$JOIN_PREFIX/certificate-key" >/dev/null 2>&1 || true
  kubectl --kubeconfig "$root/etc/kubernetes/admin.conf" -n kube-system delete secret kubeadm-certs \
    --ignore-not-found >/dev/null 2>&1 || log "could not delete the kubeadm-certs Secret"
}

# On a joined member, every minute: serve a pending join request (upload the certificates under a fresh key),
# or withdraw the certificates when there is none or it is older than the join window.
serve_joins() {
  local request who at key
  request=$(ssm_get "$(join_request_parameter)" 2>/dev/null) || request=""
  if [[ -z $request ]]; then
    withdraw_certificates
    return 0
  fi
  read -r who at <<<"$request"
  if ! [[ $at =~ ^[0-9]+$ ]] || (($(date +%s) - at > join_window_s)); then
    log "the join request of $who is older than ${join_window_s}s: withdrawing the certificates"
    aws ssm delete-parameter --name "$(join_request_parameter)" >/dev/null 2>&1 || true
    withdraw_certificates
    return 0
  fi
  ssm_get "$JOIN_PREFIX/certificate-key" >/dev/null 2>&1 && return 0 # served already
  key=$(kubeadm certs certificate-key) || return 1
  kubeadm init phase upload-certs --upload-certs --certificate-key "$key" >/dev/null || return 1
  put_secret certificate-key "$key" || return 1
  log "uploaded the control-plane certificates for $who (until it joins)"
}

# What operators read with the role <cluster>-operator (modules/iam/operator.tf; `invoke kubeconfig`, `invoke
# publish-oidc`): kubeadm's admin.conf (group kubeadm:cluster-admins, not super-admin.conf) as a SecureString
# under the cluster key, Advanced tier (a kubeconfig with its client certificate is over the Standard tier's 4 KB;
# AWS Systems Manager User Guide, "Managing parameter tiers"), and the service-account public key as a String.
publish_operator_access() {
  local pki=$root/etc/kubernetes/pki
  aws ssm put-parameter --overwrite --type SecureString --tier Advanced --key-id "$KMS_KEY_ARN" \
    --name "/$CLUSTER/control-plane/admin-kubeconfig" --value "file://$root/etc/kubernetes/admin.conf" >/dev/null \
    && aws ssm put-parameter --overwrite --type String \
      --name "/$CLUSTER/control-plane/sa-pub" --value "file://$pki/sa.pub" >/dev/null
}

# flannel's objects as provision/flannel.py rendered them into this script (the pod network, the MTU, images by
# digest): kept in the repository, nothing downloaded here (issue 26).
apply_flannel() {
  kubectl --kubeconfig "$root/etc/kubernetes/admin.conf" apply -f - <<<"$FLANNEL_MANIFEST"
}

init_cluster() {
  local out
  report initializing "waiting for $API_HOST and $LB_DNS_NAME to resolve"
  wait_until "$API_HOST to resolve (private zone record)" resolves "$API_HOST" \
    || fail "$API_HOST does not resolve after ${wait_s}s; is the private zone's api record applied?"
  wait_until "$LB_DNS_NAME to resolve" resolves "$LB_DNS_NAME" \
    || fail "the load balancer $LB_DNS_NAME does not resolve after ${wait_s}s"
  write_init_config
  for ((attempt = 1; attempt <= attempts; attempt++)); do
    if out=$(kubeadm init --config "$conf_dir/init.yaml" 2>&1); then
      break
    fi
    ((attempt < attempts)) || fail "kubeadm init failed $attempts times: $(tail -n 1 <<<"$out")"
    report retrying "kubeadm init failed (attempt $attempt of $attempts): $(tail -n 1 <<<"$out")"
    kubeadm reset -f >/dev/null 2>&1 || true
    sleep "$(backoff "$attempt")"
  done
  wait_until "the publication of the join parameters" publish_join_parameters \
    || fail "cannot publish the join token and CA hash to $JOIN_PREFIX"
  wait_until "the API through $ENDPOINT" api_up || fail "the API does not answer through $ENDPOINT"
  wait_until "flannel to apply" apply_flannel || fail "cannot apply flannel (kubectl apply of its objects failed)"
  wait_until "the operators' kubeconfig and sa.pub to publish" publish_operator_access \
    || fail "cannot publish /$CLUSTER/control-plane/admin-kubeconfig and sa-pub to SSM"
  aws ssm put-parameter --overwrite --type String --name "$INIT_PARAMETER" \
    --value "initialized by $instance_id at $(date -u +%Y-%m-%dT%H:%M:%SZ)" >/dev/null \
    || fail "cannot mark $INIT_PARAMETER initialized"
  report ready "initialised the cluster at $ENDPOINT"
}

# Private addresses of the control-plane instances EC2 still runs (this one included).
live_member_ips() {
  # shellcheck disable=SC2153 # REGION is the template's (set before these functions), not a misspelt local
  aws ec2 describe-instances --region "$REGION" \
    --filters "Name=tag:research.cluster/control-plane,Values=$CLUSTER" \
    "Name=instance-state-name,Values=pending,running" \
    --query 'Reservations[].Instances[].PrivateIpAddress' --output text
}

etcd_api() {
  local pki=$root/etc/kubernetes/pki
  curl -fsS --max-time 10 --cacert "$pki/etcd/ca.crt" --cert "$pki/apiserver-etcd-client.crt" \
    --key "$pki/apiserver-etcd-client.key" -X POST "https://$1:2379/v3/cluster/member/$2" -d "$3"
}

# Removes etcd members whose peer address is no instance of the control plane any more (a replaced member),
# so that the member joining next does not count a dead peer in the quorum. Never removes a live member.
remove_stale_etcd_members() {
  local live ip peer="" members stale id addr
  live=$(live_member_ips) || { error="cannot list the control-plane instances"; return 1; }
  live=$(tr -s '[:space:]' ' ' <<<"$live")
  live_ips=$live
  [[ " $live " == *" $self_ip "* ]] || { error="EC2 does not list $self_ip among the control plane"; return 1; }
  for ip in $live; do
    [[ $ip == "$self_ip" ]] && continue
    if members=$(etcd_api "$ip" list '{}'); then
      peer=$ip
      break
    fi
  done
  [[ -n $peer ]] || { error="no etcd member answers on 2379 (live members: $live)"; return 1; }
  stale=$(python3 -c '
import json, sys, urllib.parse
live = set(sys.argv[1].split())
for m in json.loads(sys.stdin.read()).get("members", []):
    hosts = {urllib.parse.urlsplit(u).hostname for u in m.get("peerURLs", [])}
    if hosts and not hosts & live:
        print(m["ID"], sorted(hosts)[0])
' "$live" <<<"$members") || { error="cannot parse the etcd member list"; return 1; }
  while read -r id addr; do
    [[ -n $id ]] || continue
    report healing "removing etcd member $id ($addr): its instance no longer exists"
    etcd_api "$peer" remove "{\"ID\": \"$id\"}" >/dev/null || { error="cannot remove etcd member $id"; return 1; }
  done <<<"$stale"
}

# After joining: deletes the Node objects of control-plane members whose instances are gone (they would stay
# NotReady forever). Best effort: a failure here leaves a stale Node, never a broken member.
remove_stale_nodes() {
  local name ip
  local kubectl=(kubectl --kubeconfig "$root/etc/kubernetes/admin.conf")
  "${kubectl[@]}" get nodes -l node-role.kubernetes.io/control-plane -o \
    jsonpath='{range .items[*]}{.metadata.name} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}' \
    | while read -r name ip; do
      [[ -n $ip && " $live_ips " != *" $ip "* ]] || continue
      report healing "deleting node $name ($ip): its instance no longer exists"
      "${kubectl[@]}" delete node "$name" >/dev/null || log "could not delete node $name"
    done
}

# Node identity (issue 36, docs/operations.md): kubeadm's kubeadm:node-autoapprove-bootstrap lets any holder of the
# worker token mint system:node:<any>. It is deleted each run. A bootstrap token's kubelet client request is
# approved only for one EC2 instance's private DNS name (pending or running, looked up in the name's own region)
# whose instance launched at most node_join_window_s before the request and not after it, and that has no Node
# (by name or providerID) and no approved request yet, and whose request's public key is the one that instance
# published (below); or for a lab server of the spec (kube-system/research-node-names) with no Node and no
# approval yet. Two pending requests for one lab server are both denied (one of them is not the server's); so is
# a request with subject alternative names (kube-controller-manager's signer would fail it: a kubelet client
# certificate names its node by its subject alone).
# The instance's own key: before kubeadm join an instance writes its kubelet's bootstrap key (kubelet 1.35 loads an
# existing <cert-dir>/kubelet-client.key.tmp, pkg/kubelet/certificate/bootstrap/bootstrap.go tmpPrivateKeyFile) and
# puts the SHA-256 of its public key (DER SubjectPublicKeyInfo) at s3://NODE_KEYS_BUCKET/node-keys/<aws:userid>;
# for an instance's role that is <role id>:<instance id>, and each role may put only its own userid's object
# (modules/etcd_backup). A request for instance X is approved only when its key hashes to node-keys/<role id>:X of
# the node or control-plane role: no other instance, and no token holder, can write that object.
NODE_AUTOAPPROVE_BINDING=kubeadm:node-autoapprove-bootstrap
NODE_KEYS_PREFIX="node-keys"

# public_key_sha256 < PEM (private key, CSR or public key) -> hex SHA-256 of the DER SubjectPublicKeyInfo
public_key_sha256() {
  local pem kind
  pem=$(cat)
  case $pem in
    *"CERTIFICATE REQUEST"*) kind=(openssl req -pubkey -noout) ;;
    *"PUBLIC KEY"*) kind=(cat) ;;
    *) kind=(openssl pkey -pubout) ;;
  esac
  "${kind[@]}" <<<"$pem" | openssl pkey -pubin -outform DER | sha256sum | cut -d' ' -f1
}

# publish_kubelet_key [ROOT]: the kubelet's bootstrap key (made here unless a valid one is there) and its hash as
# this instance's node-keys object; before each kubeadm join (a reset removes the key, so a new one is published).
publish_kubelet_key() {
  local dir=${1:-$root}/var/lib/kubelet/pki userid hash
  install -d -m 0755 "$dir"
  if ! openssl pkey -in "$dir/kubelet-client.key.tmp" -noout 2>/dev/null; then
    (umask 077 && openssl ecparam -name prime256v1 -genkey -noout -out "$dir/kubelet-client.key.tmp") || return 1
  fi
  hash=$(public_key_sha256 <"$dir/kubelet-client.key.tmp") && [[ -n $hash ]] || return 1
  userid=$(aws sts get-caller-identity --region "$REGION" --query UserId --output text) || return 1
  aws s3 cp --region "$REGION" --only-show-errors - "s3://$NODE_KEYS_BUCKET/$NODE_KEYS_PREFIX/$userid" <<<"$hash"
}

# node_key_roles: the role ids whose instances publish kubelet keys (the node role, the control plane's)
node_key_roles() {
  local role
  for role in "$CLUSTER-node" "$CLUSTER-control-plane"; do
    aws iam get-role --region "$REGION" --role-name "$role" --query Role.RoleId --output text || return 1
  done
}

# key_verdict INSTANCE REQUEST(base64) ROLE_IDS -> "approve INSTANCE", "deny <reason>" or "skip <reason>"
key_verdict() {
  local id=$1 want got role out err
  want=$(base64 -d <<<"$2" | public_key_sha256 2>/dev/null) || { echo "deny the request's public key cannot be read"; return; }
  [[ -n $3 ]] || { echo "skip IAM cannot be read (the roles' ids)"; return; }
  for role in $3; do
    out=$(mktemp)
    if err=$(aws s3api get-object --region "$REGION" --bucket "$NODE_KEYS_BUCKET"       --key "$NODE_KEYS_PREFIX/$role:$id" "$out" 2>&1 >/dev/null); then
      got=$(tr -d '[:space:]' <"$out")
      rm -f "$out"
      [[ $got == "$want" ]] && { echo "approve $id"; return; }
      echo "deny the request's public key is not the one $id published"
      return
    fi
    rm -f "$out"
    [[ $err == *NoSuchKey* || $err == *"Not Found"* ]] || { echo "skip S3 cannot be read"; return; }
  done
  echo "skip no key published by $id yet ($NODE_KEYS_PREFIX/<role id>:$id)"
}

region_of_node() { # ip-10-0-1-5.us-west-2.compute.internal -> us-west-2; *.ec2.internal -> us-east-1
  case $1 in
    *.ec2.internal) echo us-east-1 ;;
    *.compute.internal) cut -d. -f2 <<<"$1" ;;
    *) return 1 ;;
  esac
}

# NODE LAB NODES INSTANCES SEEN CREATED REQUEST ROLE_IDS -> "approve INSTANCE", "deny <reason>" or "skip <reason>"
csr_verdict() {
  local node=$1 lab=$2 nodes=$3 instances=$4 seen=$5 created=$6 request=$7 roles=$8
  local region found id launch rest
  [[ $node =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] || { echo "deny $node is no node name"; return; }
  [[ " $nodes " == *" $node "* ]] && { echo "deny Node $node exists"; return; }
  [[ " $seen " == *" $node "* ]] && { echo "deny $node was approved before"; return; }
  if [[ " $lab " == *" $node "* ]]; then
    echo "approve -"
    return
  fi
  region=$(region_of_node "$node") || { echo "deny $node is no EC2 name nor lab server"; return; }
  found=$(aws ec2 describe-instances --region "$region" \
    --filters "Name=private-dns-name,Values=$node" "Name=instance-state-name,Values=pending,running" \
    --query 'Reservations[].Instances[].[InstanceId,LaunchTime]' --output text) \
    || { echo "skip EC2 cannot be read"; return; }
  found=$(grep -v '^[[:space:]]*$' <<<"$found" || true)
  [[ -n $found ]] || { echo "deny no running instance $node in $region"; return; }
  [[ $(wc -l <<<"$found") == 1 ]] || { echo "deny $(wc -l <<<"$found") instances are named $node"; return; }
  read -r id launch rest <<<"$found"
  [[ " $instances " == *" $id "* ]] && { echo "deny instance $id is a Node already"; return; }
  launch=$(date -d "$launch" +%s) || { echo "deny cannot read $id's launch time"; return; }
  ((created >= launch - 60)) || { echo "deny request made before $id launched"; return; }
  ((created - launch <= node_join_window_s)) \
    || { echo "deny $id launched $((created - launch)) s before the request (join window ${node_join_window_s} s)"; return; }
  key_verdict "$id" "$request" "$roles"
}

approve_csrs() {
  local kubectl=(kubectl --kubeconfig "$root/etc/kubernetes/admin.conf")
  local csrs nodes instances lab approved name created request subject sans node verdict seen roles=""
  "${kubectl[@]}" delete clusterrolebinding "$NODE_AUTOAPPROVE_BINDING" --ignore-not-found >/dev/null \
    || log "approve-csrs: cannot delete the binding"
  csrs=$("${kubectl[@]}" get csr -o json) || return 1
  nodes=$("${kubectl[@]}" get nodes -o 'jsonpath={range .items[*]}{.metadata.name} {.spec.providerID}{"\n"}{end}') \
    || return 1
  instances=$(awk '$2 != "" {n = split($2, p, "/"); printf "%s ", p[n]}' <<<"$nodes")
  nodes=$(awk '{printf "%s ", $1}' <<<"$nodes")
  lab=$("${kubectl[@]}" -n "$node_names_ns" get configmap research-node-names -o 'jsonpath={.data.names}' 2>/dev/null) \
    || lab=""
  approved=$(python3 -c '
import datetime, json, sys
for c in json.load(sys.stdin)["items"]:
  s, m = c["spec"], c["metadata"]
  k = [x["type"] for x in (c.get("status") or {}).get("conditions") or []]
  if s.get("signerName") != "kubernetes.io/kube-apiserver-client-kubelet" or not s.get("username", "").startswith("system:bootstrap:"):
    continue
  a = m.get("annotations") or {}
  if "Approved" in k:
    print("approved", a.get("research.cluster/node", "-") or "-", a.get("research.cluster/instance", "-") or "-")
  elif not k:
    ok = set(s.get("usages") or []) <= {"digital signature", "key encipherment", "client auth"}
    t = datetime.datetime.fromisoformat(m["creationTimestamp"].replace("Z", "+00:00"))
    print("pending" if ok else "badusage", m["name"], int(t.timestamp()), s["request"])
' <<<"$csrs") || return 1
  seen=$(awk '$1 == "approved" {printf "%s ", $2}' <<<"$approved")
  if grep -q '^pending ' <<<"$approved"; then
    roles=$(node_key_roles | tr -s '[:space:]' ' ') || roles=""
  fi
  local -A subjects=() wanted=()
  while read -r kind name created request; do
    [[ $kind == pending || $kind == badusage ]] || continue
    subject=$(base64 -d <<<"$request" | openssl req -noout -subject -nameopt RFC2253 2>/dev/null) || subject=""
    subjects[$name]=${subject#subject=}
    node=${subjects[$name]#CN=system:node:}
    node=${node%,O=system:nodes}
    wanted[_$node]=$((${wanted[_$node]:-0} + 1))
  done <<<"$approved"
  while read -r kind name created request; do
    [[ $kind == pending || $kind == badusage ]] || continue
    subject=${subjects[$name]}
    node=${subject#CN=system:node:}
    node=${node%,O=system:nodes}
    sans=$(base64 -d <<<"$request" | openssl req -noout -text 2>/dev/null \
      | awk '/X509v3 Subject Alternative Name/ {getline; sub(/^ +/, ""); print}') || sans=""
    if [[ $kind == badusage ]]; then
      verdict="deny usages"
    elif [[ $subject != "CN=system:node:$node,O=system:nodes" ]]; then
      verdict="deny subject $subject"
    elif [[ -n $sans ]]; then # kube-controller-manager's signer fails such a request (ValidateKubeletClientCSR)
      verdict="deny alternative names ($sans): a kubelet client certificate names its node by its subject alone"
    elif ((${wanted[_$node]} > 1)) && [[ " $lab " == *" $node "* ]]; then
      verdict="deny ${wanted[_$node]} requests for $node at once: one is not the lab server's"
    else
      verdict=$(csr_verdict "$node" "$lab" "$nodes" "$instances" "$seen" "$created" "$request" "$roles")
    fi
    case $verdict in
      approve*)
        local id=${verdict#approve }
        "${kubectl[@]}" annotate csr "$name" "research.cluster/node=$node" "research.cluster/instance=$id" \
          --overwrite >/dev/null \
          && "${kubectl[@]}" certificate approve "$name" >/dev/null \
          && seen+="$node " && log "approve-csrs: approved $name for $node ($id)"
        ;;
      deny*)
        log "approve-csrs: denying $name: ${verdict#deny }"
        "${kubectl[@]}" certificate deny "$name" >/dev/null || true
        ;;
      *) log "approve-csrs: $name pending: ${verdict#skip }" ;;
    esac
  done <<<"$approved"
}

# The certificates alone (never a key, a kubeconfig or a .pem with its key) copied for the certificate exporter
# (provision/monitoring.py EXPORTED_CERTIFICATES, issue 36); `publish` refreshes them every hour.
export_certificates() {
  local k=$root/etc/kubernetes out f name
  out=$k/exported-certificates
  install -d -m 0755 "$out"
  for f in "$k"/pki/*.crt "$k"/pki/etcd/*.crt; do
    [[ -e $f ]] || continue
    name=${f#"$k"/pki/}
    install -m 0644 "$f" "$out/${name//\//-}"
  done
  for name in admin super-admin controller-manager scheduler; do
    [[ -e $k/$name.conf ]] || continue
    awk '$1 == "client-certificate-data:" {print $2; exit}' "$k/$name.conf" | base64 -d >"$out/$name.conf.crt"
  done
  f=$root/var/lib/kubelet/pki/kubelet-client-current.pem
  [[ ! -e $f ]] || openssl x509 -in "$f" -out "$out/kubelet-client.crt"
  chmod 0644 "$out"/*.crt 2>/dev/null || true
}

# The node lifecycle rule of the cloud controller manager (k8s.io/cloud-provider controllers/nodelifecycle,
# MonitorNodes): a Node that is not Ready and whose instance EC2 no longer has (not found, or terminated) is
# deleted; a Ready Node, a stopped instance and a Node without an aws:/// providerID (the lab's servers) are left
# alone. Region-aware, which one AWS CCM is not: each Node's instance is looked up in its own region (the
# topology.kubernetes.io/region label its kubelet set). Nothing is deleted when EC2 cannot be read. Runs every
# minute on every member (cluster-node-lifecycle.timer); deleting a deleted Node is harmless.
gc_nodes() {
  local kubectl=(kubectl --kubeconfig "$root/etc/kubernetes/admin.conf") nodes reg ids live name pid node_region ready id
  nodes=$("${kubectl[@]}" get nodes -o jsonpath='{range .items[*]}{.metadata.name}|{.spec.providerID}|{.metadata.labels.topology\.kubernetes\.io/region}|{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}') \
    || { log "gc-nodes: cannot list the nodes"; return 1; }
  while read -r reg; do
    [[ -n $reg ]] || continue
    ids=$(awk -F'|' -v r="$reg" '$2 ~ /^aws:\/\/\// && $3 == r && $4 != "True" {n = split($2, p, "/"); print p[n]}' <<<"$nodes" \
      | paste -sd, -)
    # shellcheck disable=SC2016 # a JMESPath literal, not a shell expansion
    live=$(aws ec2 describe-instances --region "$reg" --filters "Name=instance-id,Values=$ids" \
      --query 'Reservations[].Instances[?State.Name!=`terminated`].InstanceId' --output text) \
      || { log "gc-nodes: cannot describe the instances in $reg; deleting nothing there"; continue; }
    while IFS='|' read -r name pid node_region ready; do
      [[ $pid == aws:///* && $node_region == "$reg" && $ready != True ]] || continue
      id=${pid##*/}
      [[ " $(tr -s '[:space:]' ' ' <<<"$live") " == *" $id "* ]] && continue
      log "gc-nodes: deleting node $name: its instance $id ($reg) no longer exists"
      "${kubectl[@]}" delete node "$name" --wait=false >/dev/null || log "gc-nodes: could not delete node $name"
    done <<<"$nodes"
  done < <(awk -F'|' '$2 ~ /^aws:\/\/\// && $3 != "" && $4 != "True" {print $3}' <<<"$nodes" | sort -u)
}

certificate_key() { key=$(ssm_get "$JOIN_PREFIX/certificate-key" 2>/dev/null) && [[ -n $key ]]; }

join_once() {
  local token hash key="" out
  if ! token=$(ssm_get "$JOIN_PREFIX/join-token") || ! hash=$(ssm_get "$JOIN_PREFIX/ca-cert-hash"); then
    error="cannot read the join parameters"
    return 1
  fi
  api_up || { error="the API does not answer at $ENDPOINT"; return 1; }
  # ask a joined member for the certificates; it uploads them within a minute (serve_joins)
  aws ssm put-parameter --overwrite --type String --name "$(join_request_parameter)" \
    --value "$instance_id $(date +%s)" >/dev/null || { error="cannot write $(join_request_parameter)"; return 1; }
  wait_until "a member to upload the control-plane certificates" certificate_key \
    || { error="no member uploaded the control-plane certificates"; return 1; }
  write_join_config "$token" "$hash" "$key"
  if ! out=$(kubeadm join phase control-plane-prepare download-certs --config "$conf_dir/join.yaml" 2>&1 \
    && kubeadm join phase control-plane-prepare certs --config "$conf_dir/join.yaml" 2>&1); then
    # a key that does not open the Secret (two members served at once): have it served again
    aws ssm delete-parameter --name "$JOIN_PREFIX/certificate-key" >/dev/null 2>&1 || true
    error="cannot fetch the control-plane certificates: $(tail -n 1 <<<"$out")"
    return 1
  fi
  remove_stale_etcd_members || return 1
  publish_kubelet_key \
    || { error="cannot publish the kubelet's key to s3://$NODE_KEYS_BUCKET/$NODE_KEYS_PREFIX"; return 1; }
  out=$(kubeadm join --config "$conf_dir/join.yaml" 2>&1) || { error="kubeadm join: $(tail -n 1 <<<"$out")"; return 1; }
}

# A joined member serves the API: it adds its own address to the balancer's target group (Terraform attaches
# member 0 only, so the balancer never fails open onto members still joining).
register_target() {
  aws elbv2 register-targets --target-group-arn "$TARGET_GROUP_ARN" --targets "Id=$self_ip,Port=6443" >/dev/null
}

# A replaced member's address stays in the target group, unhealthy; with every target unhealthy a Network Load
# Balancer fails open onto all of them, the dead ones included. After registering its own address a joined member
# deregisters every target that is no live control-plane instance (issue 36). Never when EC2 does not list this
# member itself (an empty or failed listing would otherwise deregister every member).
deregister_stale_targets() {
  local live targets ip
  live=$(live_member_ips) || return 1
  live=" $(tr -s '[:space:]' ' ' <<<"$live") "
  [[ $live == *" $self_ip "* ]] || return 1
  targets=$(aws elbv2 describe-target-health --target-group-arn "$TARGET_GROUP_ARN" \
    --query 'TargetHealthDescriptions[].Target.Id' --output text) || return 1
  for ip in $targets; do
    [[ $live == *" $ip "* ]] && continue
    report healing "deregistering $ip from the API target group: no control-plane instance has that address"
    aws elbv2 deregister-targets --target-group-arn "$TARGET_GROUP_ARN" --targets "Id=$ip,Port=6443" >/dev/null \
      || return 1
  done
}

join_cluster() {
  report waiting "waiting for member 0 to initialise the cluster ($INIT_PARAMETER)"
  wait_until "the cluster to be initialised" initialized \
    || fail "$INIT_PARAMETER is not 'initialized' after ${wait_s}s; see member 0's status"
  wait_until "$API_HOST to resolve" resolves "$API_HOST" || fail "$API_HOST does not resolve after ${wait_s}s"
  for ((attempt = 1; attempt <= attempts; attempt++)); do
    report joining "joining the control plane at $ENDPOINT"
    if join_once; then
      rm -f "$conf_dir/join.yaml"
      # joined: the certificates leave the cluster again
      aws ssm delete-parameter --name "$(join_request_parameter)" >/dev/null 2>&1 || true
      withdraw_certificates
      wait_until "this member's address in the API target group" register_target \
        || fail "cannot register $self_ip with the API target group $TARGET_GROUP_ARN"
      deregister_stale_targets || report healing "could not deregister stale API targets; see the target group"
      remove_stale_nodes || true
      report ready "joined the control plane at $ENDPOINT"
      return 0
    fi
    ((attempt < attempts)) || fail "could not join after $attempts attempts: $error"
    report retrying "attempt $attempt of $attempts failed: $error"
    kubeadm reset -f >/dev/null 2>&1 || true
    sleep "$(backoff "$attempt")"
  done
}

install_publisher() {
  install -D -m 0700 "$0" "$root/usr/local/sbin/cluster-control-plane"
  install -d "$root/etc/systemd/system"
  cat >"$root/etc/systemd/system/publish-join-token.service" <<'UNIT'
[Unit]
Description=Publish a fresh kubeadm worker join token
[Service]
Type=oneshot
Environment=KUBECONFIG=/etc/kubernetes/admin.conf
ExecStart=/usr/local/sbin/cluster-control-plane publish
UNIT
  # each on its own timer: serve-joins never waits on gc-nodes (issue 36)
  cat >"$root/etc/systemd/system/cluster-node-lifecycle.service" <<'UNIT'
[Unit]
Description=Delete the Node objects of cloud instances that no longer exist
[Service]
Type=oneshot
ExecStart=/usr/local/sbin/cluster-control-plane gc-nodes
UNIT
  cat >"$root/etc/systemd/system/cluster-serve-joins.service" <<'UNIT'
[Unit]
Description=Upload the control-plane certificates for a joining member, or withdraw them
[Service]
Type=oneshot
ExecStart=/usr/local/sbin/cluster-control-plane serve-joins
UNIT
  cat >"$root/etc/systemd/system/cluster-csr-approver.service" <<'UNIT'
[Unit]
Description=Approve kubelet client certificates of real instances and lab servers only
[Service]
Type=oneshot
ExecStart=/usr/local/sbin/cluster-control-plane approve-csrs
UNIT
  local unit
  for unit in cluster-serve-joins cluster-csr-approver; do
    cat >"$root/etc/systemd/system/$unit.timer" <<UNIT
[Unit]
Description=$unit every minute
[Timer]
OnBootSec=1min
OnUnitActiveSec=1min
[Install]
WantedBy=timers.target
UNIT
  done
  cat >"$root/etc/systemd/system/cluster-node-lifecycle.timer" <<'UNIT'
[Unit]
Description=Node lifecycle: remove Nodes of terminated instances
[Timer]
OnBootSec=5min
OnUnitActiveSec=1min
[Install]
WantedBy=timers.target
UNIT
  cat >"$root/etc/systemd/system/publish-join-token.timer" <<'UNIT'
[Unit]
Description=Keep the kubeadm join parameters fresh
[Timer]
OnCalendar=hourly
RandomizedDelaySec=5m
Persistent=true
[Install]
WantedBy=timers.target
UNIT
}

main() {
  export AWS_DEFAULT_REGION=$REGION
  case ${1:-bootstrap} in
    publish)
      export_certificates || log "cannot copy the certificates for the exporter"
      publish_join_parameters && publish_operator_access
      return
      ;;
    gc-nodes)
      gc_nodes
      return
      ;;
    serve-joins)
      serve_joins
      return
      ;;
    approve-csrs)
      approve_csrs
      return
      ;;
    bootstrap) ;;
    *)
      echo "usage: $0 [bootstrap|publish|gc-nodes|serve-joins|approve-csrs]" >&2
      return 2
      ;;
  esac
  # path MTU probing (RFC 4821): inter-Region peering carries 8500 bytes, less than the VPC's 9001 (node_join)
  install -d "$root/etc/sysctl.d"
  echo "net.ipv4.tcp_mtu_probing = 1" >"$root/etc/sysctl.d/90-cluster-pmtu.conf"
  sysctl -p "$root/etc/sysctl.d/90-cluster-pmtu.conf" >/dev/null || log "cannot apply the path MTU probing setting"
  instance_id=$(imds instance-id) || instance_id=unknown
  self_ip=$(imds local-ipv4) || fail "cannot read this instance's address from IMDS"
  install_publisher
  write_scheduler_config
  wait_until "$INIT_PARAMETER to be readable" read_init_state || fail "cannot read $INIT_PARAMETER from SSM"
  write_audit_policy
  wait_until "the etcd encryption key" setup_encryption || fail "cannot store $JOIN_PREFIX/encryption-key in SSM"
  if [[ $MEMBER == 0 && $init == pending ]]; then
    init_cluster
  else
    join_cluster
  fi
  rm -f "$conf_dir/init.yaml"
  export_certificates || log "cannot copy the certificates for the exporter"
  systemctl daemon-reload
  systemctl enable --now publish-join-token.timer
  systemctl enable --now cluster-node-lifecycle.timer
  systemctl enable --now cluster-serve-joins.timer
  systemctl enable --now cluster-csr-approver.timer
}
