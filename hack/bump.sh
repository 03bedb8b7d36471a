#!/usr/bin/env bash
# Bump the mirrored upstream modules and print what changed in the mirrored APIs (make bump).
#
# Usage: hack/bump.sh CAPI_VERSION [MODULE@VERSION ...]
#   make bump CAPI=v1.14.2 [PROVIDER="sigs.k8s.io/cluster-api-provider-aws/v2@v2.14.0 ..."] [PLATFORM=v1.12.5]
#
# 1. snapshots the generator's model at the current pins (generator/bumpreport);
# 2. updates the pins: the root go.mod (sigs.k8s.io/cluster-api, and from v1.14 its API module
#    sigs.k8s.io/cluster-api/api; each MODULE@VERSION given), hack/capi/go.mod (the CAPI managers the e2e
#    tests run), hack/tools/go.mod (controller-gen at the version CAPI's Makefile pins), the versions named
#    in apis/upstream/table.go's comments, and, with PLATFORM, the CAPI release whose CRDs the e2e tests
#    (by default; the Makefile's PLATFORM_CAPI_NEWER is the newer release they also run against) and the
#    demo install as the platform's own;
# 3. snapshots the model at the new pins and, if it builds, regenerates (make generate), tidies go.mod and
#    builds the project (go build ./...);
# 4. prints the bump report (also written to $BUMP_REPORT, default bin/bump-report.txt).
# A step that fails stops the bump with the report so far and go's or the generator's message; the
# files already changed stay changed for the reviewer to read (git diff, git checkout . to undo).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export GOWORK=off

if [[ $# -lt 1 || -z "$1" ]]; then
	echo "usage: make bump CAPI=<version> [PROVIDER=\"<module>@<version> ...\"] [PLATFORM=<version>]" >&2
	exit 2
fi
capi="$1"
shift
providers=("$@")
platform="${PLATFORM:-}"
report="${BUMP_REPORT:-$root/bin/bump-report.txt}"
mkdir -p "$(dirname "$report")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

log() { echo "bump: $*" >&2; }

# finish prints the report of the snapshots taken so far (and why the bump stopped) and exits.
finish() {
	local status=$1 why="${2:-}"
	{
		echo "# Bump report: sigs.k8s.io/cluster-api $before_capi -> $capi${providers[*]:+, ${providers[*]}}"
		echo
		if [[ -n "$why" ]]; then
			echo "## The bump stopped: $why"
			sed 's/^/  /' "$work/why" 2>/dev/null || true
			echo
		fi
		if [[ -f "$work/after.json" ]]; then
			go run ./generator/bumpreport diff "$work/before.json" "$work/after.json"
		fi
	} | tee "$report"
	log "report written to ${report#"$root"/}"
	exit "$status"
}

# version prints the version of module $2 that the go.mod in directory $1 requires.
version() { (cd "$1" && go list -m -f '{{.Version}}' "$2" 2>/dev/null) || true; }

before_capi="$(version . sigs.k8s.io/cluster-api)"
log "snapshot of the model at the current pins (sigs.k8s.io/cluster-api $before_capi)"
go run ./generator/bumpreport snapshot -o "$work/before.json"

# The modules whose versions change, old versions first, for the comments in apis/upstream/table.go.
declare -A old_versions=()
for m in sigs.k8s.io/cluster-api "${providers[@]%@*}"; do old_versions[$m]="$(version . "$m")"; done

gets=("sigs.k8s.io/cluster-api@$capi")
# From v1.14 CAPI's API packages are their own module; the core module no longer holds them.
if [[ "$(cd "$work" && go list -m -versions sigs.k8s.io/cluster-api/api 2>/dev/null)" == *" $capi"* ]]; then
	gets+=("sigs.k8s.io/cluster-api/api@$capi")
	old_versions[sigs.k8s.io/cluster-api/api]="$(version . sigs.k8s.io/cluster-api/api)"
fi
capi_gets=${#gets[@]}
gets+=("${providers[@]}")
log "go get ${gets[*]}"
# go mod tidy comes after make generate: the committed generated code may import packages the new
# versions moved (sigs.k8s.io/cluster-api/errors).
if ! go get "${gets[@]}" >"$work/why" 2>&1; then
	finish 1 "the root module does not resolve at the new pins (go get)"
fi

capi_dir="$(go mod download -json "sigs.k8s.io/cluster-api@$capi" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
# From v1.14 the core manager's main package is sigs.k8s.io/cluster-api/core, no longer the module root.
if [[ -f "$capi_dir/core/main.go" ]]; then
	sed -i 's|^\(\t_ "sigs.k8s.io/cluster-api\)"$|\1/core"|' hack/capi/tools.go
	sed -i 's|\[capi-manager\]=sigs.k8s.io/cluster-api$|[capi-manager]=sigs.k8s.io/cluster-api/core|' hack/build-capi.sh
	# and its manifests, the manager role among them, under core/config.
	if [[ -f "$capi_dir/core/config/rbac/role.yaml" && ! -f "$capi_dir/config/rbac/role.yaml" ]]; then
		sed -i 's|{Module: "sigs.k8s.io/cluster-api", File: "config/rbac/role.yaml"|{Module: "sigs.k8s.io/cluster-api", File: "core/config/rbac/role.yaml"|' apis/upstream/rbac.go
	fi
fi
# v1.14 moved sigs.k8s.io/cluster-api/errors into the API module (api/deprecated/errors); the hand-written
# Agent types (apis/upstream/agent) follow it.
api_dir="$(go list -m -f '{{.Dir}}' sigs.k8s.io/cluster-api/api 2>/dev/null || true)"
if [[ ! -d "$capi_dir/errors" && -n "$api_dir" && -d "$api_dir/deprecated/errors" ]]; then
	sed -i 's|sigs.k8s.io/cluster-api/errors|sigs.k8s.io/cluster-api/api/deprecated/errors|g' apis/upstream/agent/*/*.go
fi
log "hack/capi: the CAPI managers the e2e tests run"
# CAPI's go.mod requires its API module at v0.0.0 with a replace to ./api, which only CAPI's own build
# honours: a module that requires CAPI must require the API module at the same version itself.
if ! (cd hack/capi && go get "${gets[@]:0:$capi_gets}" && go mod tidy) >"$work/why" 2>&1; then
	finish 1 "hack/capi does not resolve sigs.k8s.io/cluster-api@$capi"
fi

cg="$(sed -n 's/^CONTROLLER_GEN_VER[[:space:]]*:=[[:space:]]*\(v[^[:space:]]*\).*/\1/p' "$capi_dir/Makefile" | head -n 1)"
if [[ -n "$cg" && "$cg" != "$(version hack/tools sigs.k8s.io/controller-tools)" ]]; then
	log "hack/tools: controller-gen $cg, as CAPI $capi pins it"
	if ! (cd hack/tools && go get "sigs.k8s.io/controller-tools@$cg" && go mod tidy) >"$work/why" 2>&1; then
		finish 1 "hack/tools does not resolve sigs.k8s.io/controller-tools@$cg"
	fi
fi

for m in "${!old_versions[@]}"; do
	new="$(version . "$m")"
	old="${old_versions[$m]}"
	if [[ -n "$old" && -n "$new" && "$old" != "$new" ]]; then
		sed -i "s|$m $old|$m $new|g; s|$m@$old|$m@$new|g" apis/upstream/table.go
	fi
done
if [[ "$capi" =~ ^v([0-9]+)\.([0-9]+)\. ]]; then
	sed -i "s|sigs.k8s.io/cluster-api v[0-9]*\.[0-9]*\.x|sigs.k8s.io/cluster-api v${BASH_REMATCH[1]}.${BASH_REMATCH[2]}.x|" apis/upstream/table.go
fi

if [[ -n "$platform" ]]; then
	log "platform CRDs: CAPI $platform"
	sed -i "s|^const platformCAPI = \".*\"|const platformCAPI = \"$platform\"|" tests/e2e/main_test.go
	sed -i "s|sigs.k8s.io/cluster-api@v[0-9.]*|sigs.k8s.io/cluster-api@$platform|; s|own CAPI CRDs (v[0-9.]*)|own CAPI CRDs ($platform)|" hack/demo.sh
fi

log "snapshot of the model at the new pins"
go run ./generator/bumpreport snapshot -o "$work/after.json"
if grep -q '"error":\|"brokenModules":\|"missingRoles":' "$work/after.json"; then
	: >"$work/why"
	finish 1 "the generator cannot build its model of every package at the new pins (see below)"
fi

log "make generate"
if ! make generate >"$work/why" 2>&1; then
	finish 1 "make generate failed"
fi
if ! go mod tidy >"$work/why" 2>&1; then
	finish 1 "go mod tidy failed after generation"
fi
log "go build ./..."
if ! go build ./... >"$work/why" 2>&1; then
	finish 1 "the project does not build at the new pins (go build ./...)"
fi
finish 0
