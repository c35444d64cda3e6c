#!/usr/bin/env bash
# Builds the local cluster's binaries from the pinned Go modules under localcluster/go/ (each go.mod with its go.sum:
# every module verified by its checksum), once: each set is rebuilt only when its go.mod, go.sum or this script
# changes. Output: .cache/localcluster/bin/ (git-ignored). Prints each set's cold build time and each binary's
# version. Usage: localcluster/build-tools.sh [SET ...]   (sets: kubernetes etcd kwok scheduler-plugins karpenter
# kubelet-streaming)
set -euo pipefail
cd "$(dirname "$0")/.."
# go.sum is never rewritten here (-mod=readonly): a module whose checksum differs fails the build.
export CGO_ENABLED=0 GOFLAGS=-mod=readonly
bin=.cache/localcluster/bin
mkdir -p "$bin"
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
sets=("$@")
if ((${#sets[@]} == 0)); then
  for d in localcluster/go/*/go.mod; do sets+=("$(basename "$(dirname "$d")")"); done
fi
command -v go >/dev/null || { echo "build-tools: go is missing (Go 1.26 or newer)" >&2; exit 1; }

version_flags() { # $1: the version of k8s.io/component-base the binaries report
  local v=$1 major minor
  major=${v#v}; major=${major%%.*}
  minor=${v#v*.}; minor=${minor%%.*}
  local f=""
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    f+=" -X $p.gitVersion=$v -X $p.gitMajor=$major -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
    f+=" -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  echo "-s -w$f"
}

build_set() {
  local set=$1 dir=localcluster/go/$1
  [[ -f $dir/go.mod ]] || { echo "build-tools: no set $set (localcluster/go/$set/go.mod)" >&2; return 1; }
  local stamp
  stamp=$(shopt -s nullglob && cat "$dir/go.mod" "$dir/go.sum" "$dir"/*.go "$0" | sha256sum | cut -c1-16)
  if [[ $(cat "$bin/.$set.stamp" 2>/dev/null) == "$stamp" ]]; then
    echo "build-tools: $set up to date"
    return
  fi
  local start=$SECONDS ldflags
  case $set in
    kubernetes) ldflags=$(version_flags v1.35.4) ;;
    scheduler-plugins) ldflags=$(version_flags v1.34.4) ;; # the Kubernetes libraries it is built on (its emulation version)
    *) ldflags="-s -w" ;;
  esac
  echo "build-tools: building $set (cold: minutes)"
  # Karpenter v1.15.0 needs Go 1.26.9 or newer: the module proxy serves go1.27.3 (GOTOOLCHAIN below).
  local toolchain=local
  [[ $set == karpenter ]] && toolchain=go1.27.3
  local what=tool
  [[ -e $dir/main.go ]] && what=. # our own main (etcd; Karpenter with its capacity faults): named for the set
  (cd "$dir" && GOTOOLCHAIN=$toolchain go build -ldflags "$ldflags" -o "$OLDPWD/$bin/$([[ $what == . ]] && echo "$set")" $what)
  if [[ $set == kwok ]]; then
    # kwok's own stages, from the module verified by go.sum: nodes initialised and heartbeating with leases (as
    # kwokctl assembles its defaults), pods made ready and deleted at once, a Job's pods completed after the
    # delay their annotation pod-complete.stage.kwok.x-k8s.io/delay names (the "general" stage; 1-6 s without).
    local src stages=$bin/../kwok-stages
    src=$(cd "$dir" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage
    rm -rf "$stages" && mkdir -p "$stages"
    cp "$src"/node/fast/node-initialize.yaml "$src"/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
      "$src"/pod/fast/pod-ready.yaml "$src"/pod/general/pod-complete.yaml "$src"/pod/fast/pod-delete.yaml "$stages/"
    chmod -R u+w "$stages"
  fi
  echo "$stamp" >"$bin/.$set.stamp"
  echo "build-tools: $set built in $((SECONDS - start)) s"
}

for s in "${sets[@]}"; do build_set "$s"; done
for b in "$bin"/*; do
  case ${b##*/} in
    kubeadm) v=$("$b" version -o short) || v="" ;;
    kubectl) v=$("$b" version --client 2>/dev/null | head -n 1) || v="" ;;
    karpenter) v="sigs.k8s.io/karpenter $(sed -n 's/^require sigs.k8s.io\/karpenter //p;s/^\tsigs.k8s.io\/karpenter //p' localcluster/go/karpenter/go.mod | head -n 1) (no --version)" ;;
    *) v=$("$b" --version 2>/dev/null | head -n 1) || v="" ;;
  esac
  printf 'build-tools: %-24s %s\n' "${b##*/}" "${v:-?}"
done
