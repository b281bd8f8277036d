#!/usr/bin/env bash
# Builds the images the docker backend's integration tests use. No registry
# is reachable on the test machines, so both images are made locally:
#
#   runbox-test-debian:bookworm  debootstrap (minbase + bash, python3, procps)
#                                from this machine's configured Debian mirror,
#                                turned into an image with `docker import`.
#   runbox-test-busybox:latest   FROM scratch + the static busybox of Debian's
#                                busybox-static package and its applet links.
#                                No bash: it proves the agent and the exec
#                                fallback both work with only /bin/sh.
#   runbox-test-sshd:bookworm    runbox-test-debian:bookworm + openssh-server
#                                (apt-get from the same mirror, at build time):
#                                the ssh backend's second host, with its own
#                                filesystem (ssh/sshtest.StartContainer).
#
# Needs root, a running Docker engine (scripts/docker/start-dockerd.sh),
# debootstrap and apt. An image that exists is skipped unless REBUILD=1.
#
#   RUNBOX_DEBIAN_MIRROR  mirror URL (default: read from /etc/apt/sources.list*)
#   RUNBOX_DEBOOTSTRAP_CACHE  .deb cache shared with other image builds
#                         (default /var/cache/runbox-debootstrap)
set -euo pipefail

debian=runbox-test-debian:bookworm
busybox=runbox-test-busybox:latest
sshd=runbox-test-sshd:bookworm
suite=bookworm
cache=${RUNBOX_DEBOOTSTRAP_CACHE:-/var/cache/runbox-debootstrap}

have() { [[ -z ${REBUILD:-} ]] && docker image inspect "$1" >/dev/null 2>&1; }

# shellcheck source=../lib/debian-mirror.sh
. "$(dirname "$0")/../lib/debian-mirror.sh"

build_debian() {
	if have "$debian"; then
		echo "build-images: $debian exists (REBUILD=1 to rebuild)"
		return 0
	fi
	command -v debootstrap >/dev/null || apt-get install -y debootstrap
	local url root
	url=${RUNBOX_DEBIAN_MIRROR:-$(mirror)} || {
		echo "build-images: no Debian mirror in /etc/apt/sources.list*; set RUNBOX_DEBIAN_MIRROR" >&2
		return 1
	}
	mkdir -p "$cache"
	root=$(mktemp -d /var/tmp/runbox-debian-rootfs.XXXXXX)
	trap 'rm -rf "$root"' RETURN
	echo "build-images: debootstrap $suite from $url"
	debootstrap --variant=minbase --cache-dir="$cache" \
		--include=bash,python3,procps "$suite" "$root" "$url"
	rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
	echo "build-images: importing $debian"
	tar -C "$root" -c . | docker import -c 'CMD ["/bin/bash"]' - "$debian"
}

build_busybox() {
	if have "$busybox"; then
		echo "build-images: $busybox exists (REBUILD=1 to rebuild)"
		return 0
	fi
	local dir
	dir=$(mktemp -d /var/tmp/runbox-busybox.XXXXXX)
	trap 'rm -rf "$dir"' RETURN
	# The package is only downloaded and unpacked, never installed here.
	(cd "$dir" && apt-get download busybox-static)
	dpkg-deb -x "$dir"/busybox-static_*.deb "$dir/pkg"
	mkdir -p "$dir/ctx/bin" "$dir/ctx/tmp"
	cp "$dir/pkg/bin/busybox" "$dir/ctx/bin/busybox"
	cat >"$dir/ctx/Dockerfile" <<'DOCKERFILE'
FROM scratch
COPY bin/busybox /bin/busybox
RUN ["/bin/busybox", "mkdir", "-p", "/usr/bin", "/sbin", "/usr/sbin", "/tmp", "/root", "/etc"]
RUN ["/bin/busybox", "--install", "-s"]
RUN echo 'root:x:0:0:root:/root:/bin/sh' >/etc/passwd && echo 'root:x:0:' >/etc/group
CMD ["/bin/sh"]
DOCKERFILE
	echo "build-images: building $busybox"
	DOCKER_BUILDKIT=0 docker build -q -t "$busybox" "$dir/ctx"
}

build_sshd() {
	if have "$sshd"; then
		echo "build-images: $sshd exists (REBUILD=1 to rebuild)"
		return 0
	fi
	local dir url
	url=${RUNBOX_DEBIAN_MIRROR:-$(mirror)} || {
		echo "build-images: no Debian mirror in /etc/apt/sources.list*; set RUNBOX_DEBIAN_MIRROR" >&2
		return 1
	}
	dir=$(mktemp -d /var/tmp/runbox-sshd.XXXXXX)
	trap 'rm -rf "$dir"' RETURN
	# The build reaches the mirror with this machine's network (--network
	# host), as debootstrap did; keys and configuration come at run time.
	cat >"$dir/Dockerfile" <<DOCKERFILE
FROM $debian
RUN echo 'deb $url $suite main' >/etc/apt/sources.list \\
 && apt-get update -q \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openssh-server \\
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /etc/ssh/ssh_host_* \\
 && mkdir -p /run/sshd
CMD ["/usr/sbin/sshd", "-D", "-e"]
DOCKERFILE
	echo "build-images: building $sshd"
	DOCKER_BUILDKIT=0 docker build -q --network host -t "$sshd" "$dir"
}

build_debian
build_busybox
build_sshd
echo "build-images: done"
