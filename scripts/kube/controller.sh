#!/usr/bin/env bash
# scripts/kube/controller.sh DIR — (re)start the Agent Sandbox controller of
# the test cluster that up.sh DIR started: stop the one recorded in DIR/pids
# (TERM, then KILL after 30 s), start agent-sandbox-controller from the
# directory up.sh recorded in DIR/bin, record its PID in DIR/pids (down.sh
# stops it), and return once its readiness endpoint answers. Its log is
# appended to DIR/controller.log. up.sh runs it once; tests run it again to
# restart the controller under live claims.
#
# The controller runs with its extensions controllers (SandboxClaim,
# SandboxTemplate, SandboxWarmPool), without leader election, with metrics
# off and its health probes on a free loopback port. It opens no webhook
# server (it registers no webhook).
set -euo pipefail
log() { printf '== kube: %s\n' "$*" >&2; }
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
dir=$(cd "$1" && pwd)
bin=$(cat "$dir/bin")

old=$(awk '$1 == "controller" { print $2 }' "$dir/pids")
if [ -n "$old" ]; then
	if kill -TERM "$old" 2>/dev/null; then
		for _ in $(seq 300); do
			kill -0 "$old" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$old" 2>/dev/null || true
	fi
	awk '$1 != "controller"' "$dir/pids" >"$dir/pids.new"
	mv "$dir/pids.new" "$dir/pids"
fi

probe=$("$bin/kube-node" freeports 1)
log "agent-sandbox-controller (probes on 127.0.0.1:$probe)"
# setsid: a test that restarts the controller may end before the cluster.
setsid "$bin/agent-sandbox-controller" --kubeconfig "$dir/kubeconfig" \
	--extensions --leader-elect=false \
	--metrics-bind-address=0 --health-probe-bind-address="127.0.0.1:$probe" \
	>>"$dir/controller.log" 2>&1 </dev/null &
pid=$!
echo "controller $pid" >>"$dir/pids"

ready() { # the first line of GET /readyz says 200
	local line
	exec 3<>"/dev/tcp/127.0.0.1/$probe" || return 1
	printf 'GET /readyz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
	read -r line <&3 || true
	exec 3<&-
	[[ $line == *" 200 "* ]]
}
for _ in $(seq 600); do
	kill -0 "$pid" 2>/dev/null || { tail -n 30 "$dir/controller.log" >&2; log "the controller exited"; exit 1; }
	ready 2>/dev/null && exit 0
	sleep 0.1
done
log "the controller did not become ready in 60 s"
exit 1
