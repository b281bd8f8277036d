#!/usr/bin/env bash
# scripts/kube/build.sh — build, once, the binaries of runbox's Kubernetes
# test cluster and print the directory that holds them:
#   kube-apiserver  Kubernetes' API server (scripts/kube/apiserver)
#   kubectl         kubectl of the same version (scripts/kube/apiserver/kubectl)
#   kube-node       the docker-backed node, scheduler and controller-manager
#                   stand-ins (scripts/kube/node)
#   agent-sandbox-controller
#                   Agent Sandbox's own controller, built from its module
#                   sigs.k8s.io/agent-sandbox (scripts/kube/controller)
#   crds/           that module's CustomResourceDefinitions (k8s/crds),
#                   copied from the module cache
# They are cached by version under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/runbox/kube-<k8s>-vk-<vk>-as-<as>-<source hash>
# (the hash covers the three modules' sources), with their own Go build
# cache in .../runbox/kube-gocache. A cold build of kube-apiserver takes ~20
# minutes on 2 cores; the controller, built after it against the same
# k8s.io modules, a few more. As root, Debian's etcd-server and openssl are
# installed when missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
log() { printf '== kube: %s\n' "$*" >&2; }

version_of() { # module go.mod
	awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$2"
}
k8s=$(version_of k8s.io/kubernetes "$here/apiserver/go.mod")
vk=$(version_of github.com/virtual-kubelet/virtual-kubelet "$here/node/go.mod")
as=$(version_of sigs.k8s.io/agent-sandbox "$here/controller/go.mod")
hash=$(cd "$here" && cat apiserver/go.mod apiserver/go.sum apiserver/*.go apiserver/kubectl/*.go \
	node/go.mod node/go.sum node/*.go controller/go.mod controller/go.sum | sha256sum | cut -c1-12)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/runbox"
out="$cache/kube-$k8s-vk-$vk-as-$as-$hash"

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

if [ -x "$out/kube-apiserver" ] && [ -x "$out/kube-node" ] && [ -x "$out/kubectl" ] &&
	[ -x "$out/agent-sandbox-controller" ] && [ -d "$out/crds" ]; then
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
# The controller last: it shares the API server's k8s.io packages (its
# wrapper module pins the same versions), so only its own are compiled.
log "building agent-sandbox-controller $as"
t0=$(date +%s)
(cd "$here/controller" && go build -trimpath \
	-ldflags="-s -w -X sigs.k8s.io/agent-sandbox/internal/version.gitVersion=$as" \
	-o "$tmp/agent-sandbox-controller" sigs.k8s.io/agent-sandbox/cmd/agent-sandbox-controller)
log "agent-sandbox-controller built in $(($(date +%s) - t0))s"
# The CRDs of the same version, from the module itself.
mod=$(cd "$here/controller" && go list -m -f '{{.Dir}}' sigs.k8s.io/agent-sandbox)
mkdir "$tmp/crds"
cp "$mod"/k8s/crds/*.yaml "$tmp/crds/"
chmod u+w "$tmp"/crds/*.yaml
log "built in $(($(date +%s) - start))s"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "$out"
