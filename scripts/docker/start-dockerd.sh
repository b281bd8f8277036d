#!/usr/bin/env bash
# Makes sure a Docker engine answers on the default socket: installs
# Debian's docker.io if dockerd is missing, starts dockerd in the
# background if the socket does not answer, and waits (bounded) until
# `docker version` works. Idempotent: an answering engine is left alone.
#
# The test machines mount cgroup v1 hierarchies plus a controller-less v2
# at /sys/fs/cgroup/unified, so dockerd must use the cgroupfs driver (the
# systemd driver needs systemd as PID 1, which these machines do not run).
#
# Prints the PID of a dockerd it started on stdout (nothing otherwise),
# so a caller can stop exactly that one. Logs go to
# ${RUNBOX_DOCKERD_LOG:-/var/log/runbox-dockerd.log}.
#
#   RUNBOX_DOCKERD_WAIT  seconds to wait for the engine (default 60)
set -euo pipefail

wait_s=${RUNBOX_DOCKERD_WAIT:-60}
log=${RUNBOX_DOCKERD_LOG:-/var/log/runbox-dockerd.log}

answers() { docker version >/dev/null 2>&1; }

if answers; then
	exit 0
fi
if ! command -v dockerd >/dev/null; then
	echo "start-dockerd: installing docker.io" >&2
	apt-get install -y docker.io >&2 || { apt-get update >&2 && apt-get install -y docker.io >&2; }
fi
# A stale pid file of a dead daemon would make dockerd refuse to start.
if [[ -f /var/run/docker.pid ]] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
	rm -f /var/run/docker.pid
fi
setsid dockerd --exec-opt native.cgroupdriver=cgroupfs >>"$log" 2>&1 </dev/null &
pid=$!
for _ in $(seq 1 $((wait_s * 2))); do
	if answers; then
		echo "$pid"
		exit 0
	fi
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "start-dockerd: dockerd exited; last log lines:" >&2
		tail -n 20 "$log" >&2
		exit 1
	fi
	sleep 0.5
done
echo "start-dockerd: dockerd did not answer within ${wait_s}s; see $log" >&2
exit 1
