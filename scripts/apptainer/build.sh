#!/usr/bin/env bash
# Builds Apptainer (non-setuid) from source for the singularity backend's
# integration tests, and a small SIF test image from the local Docker
# engine. Debian does not package Apptainer; its source comes from the Go
# module proxy (the same client `go` uses for everything else), pinned.
#
# Everything lands in a cache keyed by version, so a warm machine skips
# the ~11 minute build:
#
#   $CACHE/apptainer-$VERSION/            the installation (bin/apptainer)
#   $CACHE/apptainer-$VERSION/sif/<id>.sif  runbox-test-debian:bookworm as
#                                        a SIF, keyed by the image's ID
#
# CACHE is ${XDG_CACHE_HOME:-$HOME/.cache}/runbox. On success the last
# lines printed are the exports the tests read (also written to
# $CACHE/apptainer-$VERSION/env, which scripts/apptainer/env prints):
#
#   RUNBOX_TEST_APPTAINER=<path of the apptainer program>
#   RUNBOX_TEST_SIF=<path of the test image>
#
# Needs root (apt-get for the build's libraries and the runtime helpers),
# gcc, make, Go. REBUILD=1 rebuilds even when the cache is warm.
set -euo pipefail

version=1.4.3
module=github.com/apptainer/apptainer
cache=${XDG_CACHE_HOME:-$HOME/.cache}/runbox
prefix=$cache/apptainer-$version
image=${RUNBOX_TEST_IMAGE:-runbox-test-debian:bookworm}

log() { printf 'apptainer: %s\n' "$*" >&2; }

# Runtime helpers (squashfuse mounts SIFs unprivileged, fuse-overlayfs
# and fuse2fs give writable overlays, uidmap gives newuidmap) and the
# build's C libraries.
want_packages=(libseccomp-dev uidmap squashfs-tools squashfuse fuse-overlayfs
	fuse2fs cryptsetup-bin libsubid-dev pkg-config gcc make)

# missing_packages prints the Debian packages of want_packages not yet
# installed (`build.sh --missing-packages` prints them, so that
# scripts/test can install everything in one apt-get run).
missing_packages() {
	local p
	for p in "${want_packages[@]}"; do
		dpkg -s "$p" >/dev/null 2>&1 || echo "$p"
	done
}

install_packages() {
	local missing
	mapfile -t missing < <(missing_packages)
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" != 0 ]; then
		log "missing packages ${missing[*]} and not root to install them"
		return 1
	fi
	log "installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

build() {
	local dir src work
	# The checksum database does not know this module; its go.sum pins
	# every dependency the build downloads.
	dir=$(GONOSUMDB=$module GOFLAGS=-mod=mod \
		go mod download -json "$module@v$version" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -d "$dir" ] || { log "go mod download gave no source directory"; return 1; }
	work=$(mktemp -d /var/tmp/runbox-apptainer-build.XXXXXX)
	# shellcheck disable=SC2064 # expanded now: $work is gone by then
	trap "chmod -R u+w '$work' 2>/dev/null; rm -rf '$work'; trap - RETURN" RETURN
	src=$work/src
	cp -r "$dir" "$src"
	chmod -R u+w "$src"
	# A module zip keeps neither the VERSION file a release tarball has
	# nor the scripts' run bits.
	echo "$version" >"$src/VERSION"
	while IFS= read -r -d '' f; do
		[ "$(head -c2 "$f" | tr -d '\0')" = '#!' ] && chmod +x "$f"
	done < <(find "$src" -type f -print0)
	# Its makefile runs `go clean -cache`: keep that away from the
	# machine's shared build cache.
	export GOCACHE=$work/gocache GOFLAGS=-mod=mod GONOSUMDB=$module
	log "configuring (prefix $prefix)"
	# --without-network: the backend asks only for the host's network or
	# `--network none`, which needs no CNI plugin; skipping the plugins
	# saves linking a dozen programs on a cold machine.
	(cd "$src" && ./mconfig --without-suid --without-network --prefix="$prefix" >"$work/mconfig.log" 2>&1) || {
		tail -n 30 "$work/mconfig.log" >&2
		return 1
	}
	log "building (11 to 25 minutes on 2 busy cores)"
	make -C "$src/builddir" -j"$(nproc)" >"$work/make.log" 2>&1 || {
		tail -n 40 "$work/make.log" >&2
		return 1
	}
	make -C "$src/builddir" install >>"$work/make.log" 2>&1 || {
		tail -n 40 "$work/make.log" >&2
		return 1
	}
	configure
	"$prefix/bin/apptainer" --version >"$prefix/.built"
}

# Root lacks CAP_SYS_RESOURCE on these machines; Apptainer's default of
# keeping root's capabilities then fails to start containers.
configure() {
	local conf=$prefix/etc/apptainer/apptainer.conf
	sed -i 's/^root default capabilities = .*/root default capabilities = no/' "$conf"
}

# sif builds the test image once per image ID from the local engine.
sif() {
	local id out
	if ! command -v docker >/dev/null || ! id=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null); then
		log "no $image in the local Docker engine (scripts/docker/build-images.sh): no test SIF"
		return 1
	fi
	id=${id#sha256:}
	out=$prefix/sif/${id:0:16}.sif
	if [ ! -s "$out" ]; then
		mkdir -p "$prefix/sif"
		log "building $out from $image"
		"$prefix/bin/apptainer" -q build --force "$out.tmp" "docker-daemon:$image" >&2
		mv "$out.tmp" "$out"
	fi
	echo "$out"
}

main() {
	if [ "${1:-}" = --missing-packages ]; then
		missing_packages
		return 0
	fi
	install_packages
	if [ -n "${REBUILD:-}" ] || [ ! -s "$prefix/.built" ]; then
		build
	else
		log "$(cat "$prefix/.built") cached in $prefix"
		configure
	fi
	local img=""
	img=$(sif) || true
	{
		echo "export RUNBOX_TEST_APPTAINER=$prefix/bin/apptainer"
		[ -n "$img" ] && echo "export RUNBOX_TEST_SIF=$img"
	} >"$prefix/env"
	cat "$prefix/env"
}

main "$@"
