#!/usr/bin/env bash
# The lab's standard image (deploy/standard-image, clusterspec/data/standard_image.yaml) pulled into containerd's
# k8s.io namespace at bake time and pinned, so that a job on a new node pulls only what changed since the bake (its
# requirements' layer, if any) and the kubelet's image garbage collection never removes it (CRI "pinned" images:
# containerd's io.cri-containerd.pinned label). The reference and its layers are recorded in
# /etc/research-cluster/prepulled-images for the package lock and for operators.
set -euo pipefail
: "${STANDARD_IMAGE?empty: the spec names no registry, nothing to pre-pull}"

if [[ -z "$STANDARD_IMAGE" ]]; then
  # a fresh account's first bake (no profile or no image yet: invoke bake-ami says so) or the local bake
  echo "prepull: no standard image to pre-pull in this bake; it is pulled at first use"
  exit 0
fi
host=${STANDARD_IMAGE%%/*}
args=(--platform linux/amd64)
if [[ "$host" == *.dkr.ecr.*.amazonaws.com ]]; then
  # The bake instance's profile (terraform/modules/iam/image_bake.tf) or, on a lab server, the site role (Chef sets
  # AWS_CONFIG_FILE/AWS_PROFILE) reads the repository: ecr:GetAuthorizationToken, BatchGetImage,
  # GetDownloadUrlForLayer. Without them the image would lose its pre-pull quietly: the bake stops instead.
  region=$(cut -d. -f4 <<<"$host")
  if ! password=$(aws ecr get-login-password --region "$region"); then
    echo "prepull: no ECR credentials for $host here (the bake instance's profile <cluster>-image-bake, or the site role)" >&2
    exit 1
  fi
  args+=(--user "AWS:$password")
fi
systemctl start containerd
if ! ctr -n k8s.io images pull "${args[@]}" "$STANDARD_IMAGE" >/dev/null; then
  echo "prepull: $STANDARD_IMAGE could not be pulled: run \`invoke push-standard-image\` before baking" >&2
  exit 1
fi
ctr -n k8s.io images label "$STANDARD_IMAGE" io.cri-containerd.pinned=pinned >/dev/null
install -d -m 0755 /etc/research-cluster
{
  echo "$STANDARD_IMAGE"
  ctr -n k8s.io content ls | awk 'NR > 1 {print "  " $1 " " $2}'
} >/etc/research-cluster/prepulled-images
echo "prepull: $STANDARD_IMAGE pulled and pinned ($(wc -l </etc/research-cluster/prepulled-images) lines recorded)"
