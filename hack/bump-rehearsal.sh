#!/usr/bin/env bash
# Rehearse a bump without touching this tree: run hack/bump.sh with the same arguments in a copy of the
# committed tree (git archive HEAD) in a temporary directory, print its report, and write it to
# $BUMP_REPORT (default bin/bump-report.txt here). The copy is removed afterwards.
#
# Usage: hack/bump-rehearsal.sh CAPI_VERSION [MODULE@VERSION ...]   (make bump-rehearsal CAPI=... PROVIDER=...)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
copy="$(mktemp -d)"
trap 'chmod -R u+w "$copy" 2>/dev/null; rm -rf "$copy"' EXIT
git -C "$root" archive HEAD | tar -x -C "$copy"
echo "bump-rehearsal: bumping a copy of $(git -C "$root" rev-parse --short HEAD) in $copy" >&2
BUMP_REPORT="${BUMP_REPORT:-$root/bin/bump-report.txt}" "$copy/hack/bump.sh" "$@"
