#!/usr/bin/env bash
# Runs the termination package's tests, including the systemd-scope ones,
# inside a container where systemd is PID 1 (the runbox-systemd image from
# build-image.sh, built first if missing). The test binary is compiled
# here with `go test -c` and copied in; RUNBOX_SYSTEMD_TESTS=1 selects the
# scope tests. Extra arguments go to the test binary, for example
#   scripts/systemd/run-tests.sh -test.run 'Scope|Container'
#
# Needs root and a running Docker engine. --privileged does not work on
# these machines; systemd gets SYS_ADMIN, tmpfs /run and the host's cgroups.
# RUNBOX_INTEGRATION is passed through (require turns skips into failures).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
image=${RUNBOX_SYSTEMD_IMAGE:-runbox-systemd:bookworm}
export RUNBOX_SYSTEMD_IMAGE=$image

"$here/build-image.sh"

work=$(mktemp -d)
name=runbox-systemd-test-$$
cleanup() {
	docker rm -f "$name" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "run-tests: building the test binary"
(cd "$repo" && go test -c -race -o "$work/termination.test" ./termination/)

docker run -d --name "$name" \
	--cap-add SYS_ADMIN \
	--tmpfs /run --tmpfs /run/lock \
	--cgroupns=host -v /sys/fs/cgroup:/sys/fs/cgroup:rw \
	"$image" >/dev/null

# Wait (bounded) for boot to finish; "degraded" still has a working
# manager. The bus does not exist for the first moments, so poll.
state=
for _ in $(seq 1 180); do
	state=$(docker exec "$name" timeout 30 systemctl is-system-running --wait 2>/dev/null || true)
	case $state in running | degraded) break ;; esac
	sleep 0.5
done
echo "run-tests: systemd is ${state:-unreachable}"
case $state in
running | degraded) ;;
*)
	docker exec "$name" systemctl --failed --no-pager || true
	echo "run-tests: systemd did not boot in the container" >&2
	exit 1
	;;
esac

docker cp "$work/termination.test" "$name:/usr/local/bin/termination.test"
docker exec -w /tmp \
	-e RUNBOX_SYSTEMD_TESTS=1 \
	-e RUNBOX_INTEGRATION="${RUNBOX_INTEGRATION:-}" \
	"$name" /usr/local/bin/termination.test -test.count=1 -test.v "$@"
