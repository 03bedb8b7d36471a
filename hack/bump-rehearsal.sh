#!/usr/bin/env bash
# Rehearse a bump without touching this tree: run hack/bump.sh with the same arguments in a copy of the
# committed tree (git archive HEAD) in a temporary directory, print its report, and write it to
# $BUMP_REPORT (default bin/bump-report.txt here). The copy is removed afterwards.
#
# With BUMP_COMPARE=<git ref>, the report ends with the generated tree the rehearsal wrote (apis/private,
# zz_generated, config) compared with the one committed at that ref: a bump back to the pins of that ref
# must give back its generated tree ("no difference"), which proves the generator still handles them.
#
# Usage: [BUMP_COMPARE=<ref>] hack/bump-rehearsal.sh CAPI_VERSION [MODULE@VERSION ...]
#        (make bump-rehearsal CAPI=... PROVIDER=... [COMPARE=<ref>])
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
report="${BUMP_REPORT:-$root/bin/bump-report.txt}"
compare="${BUMP_COMPARE:-}"
tmp="$(mktemp -d)"
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
copy="$tmp/tree"
mkdir "$copy"
if [[ -n "$compare" ]]; then
	compare_id="$(git -C "$root" rev-parse --short "$compare^{commit}")"
fi
git -C "$root" archive HEAD | tar -x -C "$copy"
head="$(git -C "$root" rev-parse --short HEAD)"
echo "bump-rehearsal: bumping a copy of $head" >&2
status=0
BUMP_REPORT="$report" "$copy/hack/bump.sh" "$@" || status=$?

if [[ -n "$compare" ]]; then
	mkdir "$tmp/ref"
	git -C "$root" archive "$compare_id" apis/private zz_generated config | tar -x -C "$tmp/ref"
	{
		echo "## The generated tree (apis/private, zz_generated, config) against $compare ($compare_id), rehearsed on $head"
		differences="$(cd "$tmp" && for d in apis/private zz_generated config; do diff -r -q "ref/$d" "tree/$d" || true; done)"
		if [[ -z "$differences" ]]; then
			echo "  no difference"
		else
			sed 's/^/  /' <<<"$differences"
		fi
		echo
	} | tee -a "$report"
fi
exit "$status"
