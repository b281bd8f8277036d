#!/bin/sh
# Installs the official Vercel Sandbox client (the @vercel/sandbox npm
# package, pinned) for vercel/client_js_test.go, which drives the fake API
# with it. Cached by version: a warm machine skips the install.
# Needs node and npm; without them it says so and exits 0 (the test skips).
set -eu
version=3.5.0
dir="${XDG_CACHE_HOME:-$HOME/.cache}/runbox/vercel-sandbox-js-$version"
if [ -f "$dir/node_modules/@vercel/sandbox/package.json" ]; then
	echo "vercel: @vercel/sandbox $version already in $dir"
	exit 0
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "vercel: node or npm missing; the official client test will skip" >&2
	exit 0
fi
tmp="$dir.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm init -y >/dev/null && npm install --no-audit --no-fund --silent "@vercel/sandbox@$version")
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
echo "vercel: installed @vercel/sandbox $version in $dir"
