#!/usr/bin/env bash
# Builds the runbox-systemd image: Debian bookworm with systemd as PID 1
# and a D-Bus system bus, for the termination package's systemd-scope
# tests. No registry is reachable, so the root filesystem comes from
# debootstrap against this machine's configured Debian mirror and is
# turned into an image with `docker import`.
#
# Needs root, debootstrap and a running Docker engine. The image is cached:
# nothing is rebuilt while it exists, unless REBUILD=1.
#
#   RUNBOX_SYSTEMD_IMAGE  image tag (default runbox-systemd:bookworm)
#   RUNBOX_DEBIAN_MIRROR  mirror URL (default: read from /etc/apt/sources.list*)
set -euo pipefail

image=${RUNBOX_SYSTEMD_IMAGE:-runbox-systemd:bookworm}
suite=bookworm

if [[ -z ${REBUILD:-} ]] && docker image inspect "$image" >/dev/null 2>&1; then
	echo "build-image: $image exists (REBUILD=1 to rebuild)"
	exit 0
fi

# shellcheck source=../lib/debian-mirror.sh
. "$(dirname "$0")/../lib/debian-mirror.sh"

url=${RUNBOX_DEBIAN_MIRROR:-$(mirror)} || {
	echo "build-image: no Debian mirror in /etc/apt/sources.list*; set RUNBOX_DEBIAN_MIRROR" >&2
	exit 1
}
command -v debootstrap >/dev/null || {
	echo "build-image: debootstrap missing (apt-get install -y debootstrap)" >&2
	exit 1
}

root=$(mktemp -d /var/tmp/runbox-systemd-rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT

echo "build-image: debootstrap $suite from $url"
debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,procps \
	"$suite" "$root" "$url"

# Units that cannot work in a container (no udev, no ttys, no kernel
# modules) are masked so that boot reaches its target quickly and cleanly.
for u in systemd-udevd.service systemd-udevd-control.socket systemd-udevd-kernel.socket \
	systemd-udev-trigger.service getty@tty1.service console-getty.service \
	systemd-modules-load.service sys-kernel-config.mount sys-kernel-debug.mount \
	sys-kernel-tracing.mount dev-hugepages.mount systemd-remount-fs.service \
	systemd-firstboot.service systemd-hwdb-update.service; do
	ln -sf /dev/null "$root/etc/systemd/system/$u"
done
echo runbox-systemd >"$root/etc/hostname"
: >"$root/etc/machine-id"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*

echo "build-image: importing as $image"
tar -C "$root" -c . | docker import \
	-c 'ENV container=docker' \
	-c 'CMD ["/lib/systemd/systemd"]' \
	- "$image"
echo "build-image: done"
