#!/usr/bin/env bash
# scripts/kube/up.sh DIR — start runbox's Kubernetes test cluster with its
# state in DIR: etcd and kube-apiserver on free loopback ports, the Agent
# Sandbox CRDs of the agent-sandbox module, the docker-backed node, and Agent
# Sandbox's own controller (controller.sh). Writes DIR/kubeconfig (admin,
# context runbox-test), DIR/env (exports RUNBOX_TEST_KUBECONFIG), DIR/bin
# (the binaries' directory) and DIR/pids (for down.sh), and returns once a
# smoke pod has run `true` through exec and the controller is ready.
# On failure it prints the logs' tail, stops what it started and exits 1.
#
# RUNBOX_KUBE_BIN names a directory holding what build.sh builds
# (kube-apiserver, kube-node, agent-sandbox-controller, crds/; default: what
# build.sh builds or finds in its cache).
# RUNBOX_KUBE_SMOKE_IMAGE is the smoke pod's image (a local image; default
# runbox-test-busybox:latest).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
log() { printf '== kube: %s\n' "$*" >&2; }

[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
mkdir -p "$1"
dir=$(cd "$1" && pwd)
if [ -s "$dir/pids" ]; then
	log "$dir/pids exists: run down.sh $dir first"
	exit 1
fi
bin=${RUNBOX_KUBE_BIN:-$("$here/build.sh")}
image=${RUNBOX_KUBE_SMOKE_IMAGE:-runbox-test-busybox:latest}

fail() {
	log "$*"
	for f in etcd apiserver node controller; do
		[ -f "$dir/$f.log" ] && { echo "--- $dir/$f.log (tail)" >&2; tail -n 30 "$dir/$f.log" >&2; }
	done
	"$here/down.sh" "$dir" >&2 || true
	exit 1
}
trap 'fail "failed at line $LINENO"' ERR

start=$(date +%s)
mkdir -p "$dir/pki"
pki="$dir/pki"
cert() { # name subject [san]
	local name=$1 subj=$2 san=${3:-}
	openssl req -new -newkey rsa:2048 -nodes -keyout "$pki/$name.key" -subj "$subj" -out "$pki/$name.csr" 2>/dev/null
	printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n%s\n' \
		"${san:+subjectAltName=$san}" >"$pki/$name.ext"
	openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
		-days 365 -sha256 -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
}
openssl req -x509 -new -newkey rsa:2048 -nodes -keyout "$pki/ca.key" -subj "/CN=runbox-test-ca" \
	-days 365 -sha256 -out "$pki/ca.crt" 2>/dev/null
cert apiserver "/CN=kube-apiserver" "IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
cert admin "/O=system:masters/CN=runbox-test-admin"
cert kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
cert node "/CN=runbox-node" "IP:127.0.0.1,DNS:localhost"
openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null

mapfile -t ports < <("$bin/kube-node" freeports 4)
etcd_port=${ports[0]} peer_port=${ports[1]} api_port=${ports[2]} node_port=${ports[3]}
cluster="runbox-$(printf '%s' "$dir" | sha256sum | cut -c1-10)"
echo "$cluster" >"$dir/cluster-id"
: >"$dir/pids"
echo "$bin" >"$dir/bin"

log "etcd on 127.0.0.1:$etcd_port"
etcd --name default --data-dir "$dir/etcd" \
	--listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
	--listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
	--initial-cluster "default=http://127.0.0.1:$peer_port" --unsafe-no-fsync \
	>"$dir/etcd.log" 2>&1 &
echo "etcd $!" >>"$dir/pids"

log "kube-apiserver on 127.0.0.1:$api_port"
"$bin/kube-apiserver" \
	--etcd-servers="http://127.0.0.1:$etcd_port" \
	--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$api_port" \
	--tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
	--client-ca-file="$pki/ca.crt" \
	--service-account-issuer=https://kubernetes.default.svc \
	--service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
	--service-cluster-ip-range=10.0.0.0/24 \
	--authorization-mode=RBAC \
	--endpoint-reconciler-type=none \
	--kubelet-client-certificate="$pki/kubelet-client.crt" --kubelet-client-key="$pki/kubelet-client.key" \
	--kubelet-certificate-authority="$pki/ca.crt" --kubelet-preferred-address-types=InternalIP \
	--allow-privileged=true --profiling=false \
	>"$dir/apiserver.log" 2>&1 &
echo "apiserver $!" >>"$dir/pids"

b64() { base64 -w0 <"$1"; }
cat >"$dir/kubeconfig" <<KCFG
apiVersion: v1
kind: Config
clusters:
- name: runbox-test
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority-data: $(b64 "$pki/ca.crt")
users:
- name: runbox-test-admin
  user:
    client-certificate-data: $(b64 "$pki/admin.crt")
    client-key-data: $(b64 "$pki/admin.key")
contexts:
- name: runbox-test
  context: {cluster: runbox-test, user: runbox-test-admin, namespace: default}
current-context: runbox-test
KCFG
chmod 600 "$dir/kubeconfig"
echo "export RUNBOX_TEST_KUBECONFIG=$dir/kubeconfig" >"$dir/env"

# apply waits (bounded) for the API server before creating the CRDs.
log "applying the Agent Sandbox CRDs"
"$bin/kube-node" apply --kubeconfig "$dir/kubeconfig" "$bin"/crds/*.yaml >>"$dir/apply.log" 2>&1 ||
	{ cat "$dir/apply.log" >&2; fail "the API server did not come up or refused the CRDs"; }

log "kube-node on 127.0.0.1:$node_port"
"$bin/kube-node" run --kubeconfig "$dir/kubeconfig" --name runbox-node --cluster "$cluster" \
	--listen "127.0.0.1:$node_port" --cert "$pki/node.crt" --key "$pki/node.key" --client-ca "$pki/ca.crt" \
	>"$dir/node.log" 2>&1 &
echo "node $!" >>"$dir/pids"

"$bin/kube-node" smoke --kubeconfig "$dir/kubeconfig" --image "$image" --timeout 3m >&2 ||
	fail "the smoke pod did not run"
"$here/controller.sh" "$dir" || fail "the Agent Sandbox controller did not start"
trap - ERR
log "cluster up in $(($(date +%s) - start))s: . $dir/env"
