#!/usr/bin/env bash
# scripts/kube/build.sh — build, once, the binaries of runbox's Kubernetes
# test cluster and print the directory that holds them:
#   kube-apiserver  Kubernetes' API server (scripts/kube/apiserver)
#   kubectl         kubectl of the same version (scripts/kube/apiserver/kubectl)
#   kube-node       the docker-backed node, scheduler and controllers
#                   (scripts/kube/node)
# They are cached by version under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/runbox/kube-<k8s>-vk-<vk>-<source hash>
# (the hash covers both modules' sources), with their own Go build cache in
# .../runbox/kube-gocache. A cold build of kube-apiserver takes ~20 minutes
# on 2 cores. As root, Debian's etcd-server and openssl are installed when
# missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
log() { printf '== kube: %s\n' "$*" >&2; }

version_of() { # module go.mod
	awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$2"
}
k8s=$(version_of k8s.io/kubernetes "$here/apiserver/go.mod")
vk=$(version_of github.com/virtual-kubelet/virtual-kubelet "$here/node/go.mod")
hash=$(cd "$here" && cat apiserver/go.mod apiserver/go.sum apiserver/*.go apiserver/kubectl/*.go \
	node/go.mod node/go.sum node/*.go | sha256sum | cut -c1-12)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/runbox"
out="$cache/kube-$k8s-vk-$vk-$hash"

missing=()
command -v etcd >/dev/null || missing+=(etcd-server)
command -v openssl >/dev/null || missing+=(openssl) # up.sh makes the certificates
# `build.sh --missing-packages` prints them, so that scripts/test can
# install everything in one apt-get run.
if [ "${1:-}" = --missing-packages ]; then
	[ ${#missing[@]} -eq 0 ] || printf '%s\n' "${missing[@]}"
	exit 0
fi
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ]; then
		log "installing ${missing[*]}"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
	else
		log "missing: ${missing[*]} (Debian packages)"
		exit 1
	fi
fi

if [ -x "$out/kube-apiserver" ] && [ -x "$out/kube-node" ] && [ -x "$out/kubectl" ]; then
	echo "$out"
	exit 0
fi

mkdir -p "$cache"
tmp=$(mktemp -d "$cache/kube-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export GOCACHE="$cache/kube-gocache" CGO_ENABLED=0
start=$(date +%s)
log "building kube-node (virtual-kubelet $vk)"
(cd "$here/node" && go build -trimpath -ldflags='-s -w' -o "$tmp/kube-node" .)
log "building kube-apiserver $k8s (about 20 minutes on a cold cache)"
# The version stamp a release build sets, so /version answers $k8s.
minor=${k8s#v1.}
minor=${minor%%.*}
stamp=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	stamp+=" -X $pkg.gitVersion=$k8s -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done
(cd "$here/apiserver" && go build -trimpath -ldflags="-s -w$stamp" -o "$tmp/kube-apiserver" .)
# kubectl shares nearly all its packages with the API server: once those are
# cached it costs a few minutes more.
log "building kubectl $k8s"
(cd "$here/apiserver" && go build -trimpath -ldflags="-s -w$stamp" -o "$tmp/kubectl" ./kubectl)
log "built in $(($(date +%s) - start))s"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "$out"
