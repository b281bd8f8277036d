#!/usr/bin/env bash
# scripts/kube/down.sh DIR — stop the test cluster that up.sh DIR started:
# the processes it recorded in DIR/pids (TERM, then KILL after 30 s), then
# any docker container or volume still labelled with the cluster's ID.
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
dir=$1
if [ -f "$dir/pids" ]; then
	# The controller first, so it makes nothing more; then the node, so it
	# removes its own containers; etcd last.
	for name in controller node apiserver etcd; do
		pid=$(awk -v n="$name" '$1 == n { print $2 }' "$dir/pids")
		[ -n "$pid" ] || continue
		kill -TERM "$pid" 2>/dev/null || continue
		for _ in $(seq 300); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	done
	rm -f "$dir/pids"
fi
if [ -f "$dir/cluster-id" ] && command -v docker >/dev/null; then
	label="runbox.kube.node=$(cat "$dir/cluster-id")"
	ids=$(docker ps -aq --filter "label=$label" 2>/dev/null)
	[ -z "$ids" ] || docker rm -f $ids >/dev/null
	vols=$(docker volume ls -q --filter "label=$label" 2>/dev/null)
	[ -z "$vols" ] || docker volume rm -f $vols >/dev/null
fi
exit 0
