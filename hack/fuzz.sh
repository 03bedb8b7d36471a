#!/usr/bin/env bash
# Run every fuzz target of the proxy for a while each (go test -fuzz runs one target at a time).
#
#   hack/fuzz.sh [FUZZTIME]        # default 20s per target
#   FUZZ_SAVE=1 hack/fuzz.sh 2m    # also copy the small inputs the fuzzer found into testdata/fuzz,
#                                  # the seed corpora plain `go test` replays (commit them)
#
# A failing input is written to <package>/testdata/fuzz/<Target>/ by go test itself: fix the bug and
# keep the file, so that the input is replayed from then on.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
fuzztime="${1:-20s}"
targets=(
	"./proxy/stream FuzzList"
	"./proxy/stream FuzzWatch"
	"./proxy/classify FuzzClassify"
	"./proxy/body FuzzUpstream"
	"./proxy/body FuzzPrivate"
	"./proxy/body FuzzPatch"
	"./proxy/body FuzzJSONPatchPointers"
	"./proxy/server FuzzRequest"
	"./translate FuzzRewriteRulesAndKeys"
	"./translate FuzzPointerTokens"
)
# At most this many of the fuzzer's inputs per target, of at most this many bytes, are saved.
max_files=40
max_bytes=2048

cache="$(go env GOCACHE)/fuzz/$(go list -m)"
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
