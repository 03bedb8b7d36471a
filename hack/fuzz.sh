#!/usr/bin/env bash
# Run every fuzz target of the proxy for a while each (go test -fuzz runs one target at a time).
#
#   hack/fuzz.sh [FUZZTIME]        # default 20s per target
#   hack/fuzz.sh -list             # only print the targets
#   FUZZ_SAVE=1 hack/fuzz.sh 2m    # also copy the small inputs the fuzzer found into testdata/fuzz,
#                                  # the seed corpora plain `go test` replays (commit them)
#
# A failing input is written to <package>/testdata/fuzz/<Target>/ by go test itself: fix the bug and
# keep the file, so that the input is replayed from then on.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
fuzztime="${1:-20s}"
# The targets are what `go test -list` finds in the packages whose tests declare a Fuzz function (listing
# only those packages: the e2e packages' TestMain starts a control plane even to list).
mapfile -t pkgs < <(git ls-files -- '*_test.go' | xargs grep -lE '^func Fuzz[A-Z0-9_]' | xargs -n1 dirname | sort -u | sed 's|^|./|')
module="$(go list -m)"
targets=()
pending=()
while read -r line; do
	case "$line" in
	Fuzz*) pending+=("$line") ;;
	ok*)
		read -r _ pkg _ <<<"$line"
		for t in "${pending[@]}"; do targets+=("./${pkg#"$module"/} $t"); done
		pending=()
		;;
	esac
done < <(go test -list '^Fuzz' "${pkgs[@]}")
if [[ ${#targets[@]} -eq 0 ]]; then
	echo "hack/fuzz.sh: go test -list found no fuzz targets" >&2
	exit 1
fi
echo "${#targets[@]} fuzz targets"
if [[ "$fuzztime" == "-list" ]]; then
	printf '%s\n' "${targets[@]}"
	exit 0
fi
# At most this many of the fuzzer's inputs per target, of at most this many bytes, are saved.
max_files=40
max_bytes=2048

cache="$(go env GOCACHE)/fuzz/$module"
for t in "${targets[@]}"; do
	read -r pkg target <<<"$t"
	echo "== $pkg $target ($fuzztime)"
	go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
	if [[ -n "${FUZZ_SAVE:-}" ]]; then
		found="$cache/${pkg#./}/$target"
		dest="$pkg/testdata/fuzz/$target"
		mkdir -p "$dest"
		if [[ -d "$found" ]]; then
			find "$found" -type f -size -"$((max_bytes + 1))"c -printf '%s %p\n' | sort -n | head -n "$max_files" |
				while read -r _ file; do cp "$file" "$dest/"; done
		fi
		echo "   $(find "$dest" -type f | wc -l) inputs in $dest"
	fi
done
