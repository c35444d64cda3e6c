#!/usr/bin/env bash
# kubeadm, kubelet and kubectl from pkgs.k8s.io, pinned to the spec's Kubernetes version and held.
set -euo pipefail
: "${KUBERNETES_VERSION:?}" "${KUBERNETES_MINOR:?}"
export DEBIAN_FRONTEND=noninteractive

# pkgs.k8s.io's channel for the minor, trusted by its key's fingerprint: apt-repositories.sh.
apt-get update -q

# On a physical server Chef writes the image's package lock: the exact version the image has wins over the archive's
# newest build of the same release. awk reads to the end (no early exit): SIGPIPE under pipefail.
lock="${PACKAGE_LOCK:-/etc/cluster/package-lock}"
locked() { if [[ -f "$lock" ]]; then awk -v p="$1" '$1 == p { print $2 }' "$lock"; fi; }
pkg=$(locked kubelet)
[[ -n "$pkg" ]] || pkg=$(apt-cache madison kubelet |
  awk -v v="$KUBERNETES_VERSION" '!found && index($3, v "-") == 1 { print $3; found = 1 }')
if [[ -z "$pkg" ]]; then
  echo "kubernetes: kubelet $KUBERNETES_VERSION is not in pkgs.k8s.io v$KUBERNETES_MINOR" >&2
  exit 1
fi
apt-mark unhold kubelet kubeadm kubectl >/dev/null 2>&1 || true
apt-get install -y -q --no-install-recommends "kubelet=$pkg" "kubeadm=$pkg" "kubectl=$pkg"
apt-mark hold kubelet kubeadm kubectl
# kubelet starts once kubeadm join has written its configuration.
systemctl enable kubelet

# The kubelet pulls the lab's images from its ECR registry (issue 36: the mirror of every third-party image, the
# autoscaler's, the standard image) with short-lived credentials: a kubelet image credential provider (kubelet
# "Configure a kubelet image credential provider") that asks ECR for a token with this machine's AWS identity (the
# node role on EC2; on a lab server the site role, AWS_CONFIG_FILE/AWS_PROFILE from Chef). No registry password is
# ever written to disk.
root=${IMAGE_ROOT:-} # tests install into a folder
providers=/usr/local/lib/kubelet/credential-providers
install -d -m 0755 "$root$providers"
install -m 0755 /dev/stdin "$root$providers/ecr-login" <<'ECR_LOGIN'
#!/usr/bin/python3
"""kubelet image credential provider: CredentialProviderRequest on stdin, a CredentialProviderResponse with an ECR
token for the image's registry on stdout (aws ecr get-authorization-token, this machine's AWS identity)."""
import base64
import json
import re
import subprocess
import sys

HOST = re.compile(r"^(\d{12})\.dkr\.ecr\.([a-z0-9-]+)\.amazonaws\.com$")
request = json.load(sys.stdin)
host = request["image"].split("/", 1)[0]
m = HOST.match(host)
if not m:
    sys.exit(f"ecr-login: {host} is not an ECR registry (<account>.dkr.ecr.<region>.amazonaws.com)")
done = subprocess.run(["aws", "ecr", "get-authorization-token", "--region", m[2], "--registry-ids", m[1],
                       "--query", "authorizationData[0].authorizationToken", "--output", "text"],
                      capture_output=True, text=True)
if done.returncode != 0:
    sys.exit(f"ecr-login: no ECR token for {host}: {(done.stderr.strip().splitlines() or ['no output'])[-1]}")
username, password = base64.b64decode(done.stdout.strip()).decode().split(":", 1)
json.dump({"apiVersion": request.get("apiVersion", "credentialprovider.kubelet.k8s.io/v1"),
           "kind": "CredentialProviderResponse", "cacheKeyType": "Registry", "cacheDuration": "6h",
           "auth": {host: {"username": username, "password": password}}}, sys.stdout)
ECR_LOGIN
env_lines=""
for name in AWS_CONFIG_FILE AWS_PROFILE; do
  if [[ -n "${!name:-}" ]]; then env_lines+=$'\n'"      - {name: $name, value: \"${!name}\"}"; fi
done
install -d -m 0755 "$root/etc/kubernetes"
install -m 0644 /dev/stdin "$root/etc/kubernetes/image-credential-providers.yaml" <<CONFIG
apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: ecr-login
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    matchImages: ["*.dkr.ecr.*.amazonaws.com"]
    defaultCacheDuration: "6h"${env_lines:+
    env:$env_lines}
CONFIG
# kubeadm's drop-in (the kubeadm package) starts the kubelet; this one starts it with the provider's two flags.
kubeadm_dropin=""
for d in /usr/lib/systemd/system/kubelet.service.d /lib/systemd/system/kubelet.service.d /etc/systemd/system/kubelet.service.d; do
  if [[ -f "$root$d/10-kubeadm.conf" ]]; then kubeadm_dropin="$root$d/10-kubeadm.conf"; break; fi
done
exec_start=$(grep -E '^ExecStart=/' "${kubeadm_dropin:-/dev/null}" | tail -n 1 || true)
if [[ -z "$exec_start" ]]; then
  echo "kubernetes: no ExecStart in kubeadm's kubelet drop-in (10-kubeadm.conf): the image credential provider cannot be wired" >&2
  exit 1
fi
install -d -m 0755 "$root/etc/systemd/system/kubelet.service.d"
install -m 0644 /dev/stdin "$root/etc/systemd/system/kubelet.service.d/20-image-credentials.conf" <<DROPIN
[Service]
ExecStart=
$exec_start --image-credential-provider-config=/etc/kubernetes/image-credential-providers.yaml --image-credential-provider-bin-dir=$providers
DROPIN
systemctl daemon-reload
