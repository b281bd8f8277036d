# Sourced by the image build scripts.

# mirror prints the first Debian archive URL configured for apt: deb822
# .sources files ("URIs:" lines) first, then one-line sources.list entries.
# Security archives are skipped: debootstrap needs the main archive.
mirror() {
	local f uri
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -r $f ]] || continue
		while read -r uri; do
			[[ $uri == *security* ]] && continue
			echo "$uri"
			return 0
		done < <(awk '/^URIs:/ { for (i = 2; i <= NF; i++) print $i }' "$f")
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -r $f ]] || continue
		uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' "$f" | grep -v security | head -n1 || true)
		if [[ -n $uri ]]; then
			echo "$uri"
			return 0
		fi
	done
	return 1
}
