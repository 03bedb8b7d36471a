#!/usr/bin/env bash
# Bump the mirrored upstream modules and print what changed in the mirrored APIs (make bump).
#
# Usage: hack/bump.sh CAPI_VERSION [MODULE@VERSION ...]
#   make bump CAPI=v1.14.2 [PROVIDER="sigs.k8s.io/cluster-api-provider-azure@v1.27.0 ..."] [PLATFORM=v1.12.5]
#             [CONTROLLER_GEN_VERSION=v0.21.0]
#
# 1. snapshots the generator's model at the current pins (generator/bumpreport);
# 2. updates the pins, both ways (a bump back to an older CAPI undoes what a bump forward did):
#    - the root go.mod, with one go get: sigs.k8s.io/cluster-api, with its API module
#      sigs.k8s.io/cluster-api/api where the module proxy serves it at that version (from v1.14), dropped
#      where not; each MODULE@VERSION given (through the packages apis/upstream mirrors from it;
#      MODULE@none drops it); controller-runtime and the rest move as the new versions require, and the
#      Kubernetes libraries that were at k8s.io/apimachinery's version move with it;
#    - sigs.k8s.io/cluster-api/errors: where the pinned CAPI module no longer has it (v1.14 moved it to
#      sigs.k8s.io/cluster-api/api/deprecated/errors) and a mirrored package still imports it, the
#      compatibility module hack/compat/cluster-api-errors provides it (a replace in go.mod and in
#      tests/alerts/go.mod); otherwise that replace is dropped. The hand-written Agent types import the
#      package where the pinned CAPI keeps it;
#    - where CAPI keeps its core manager (the module root, or core/ from v1.14) and its manifests
#      (config/ or core/config/, in apis/upstream's tables);
#    - hack/capi/go.mod (the CAPI managers the e2e tests run), the versions named in
#      apis/upstream/table.go's comments, and, with PLATFORM, the CAPI release whose CRDs the e2e tests
#      (by default; the Makefile's PLATFORM_CAPI_NEWER is the newer release they also run against) and the
#      demo install as the platform's own; with CONTROLLER_GEN_VERSION, hack/tools/go.mod's controller-gen
#      (which must reproduce every mirrored module's published CRDs: the report lists the versions those
#      were generated with, and CAPI's Makefile pin);
# 3. snapshots the model at the new pins and, if it builds, regenerates (make generate), tidies go.mod
#    (and tests/alerts/go.mod) and builds the project (go build ./...);
# 4. asks the module proxy for newer versions of every upstream module, by exact version (the next patch
#    and minor release; it serves versions it does not list), and
# 5. prints the bump report (also written to $BUMP_REPORT, default bin/bump-report.txt): the pins that
#    changed, the compatibility modules in use, the versions probed, then the model's differences. The
#    report names no machine path and no registry host: paths are module- or repository-relative, and the
#    registry is "the module proxy".
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

compat_mod=sigs.k8s.io/cluster-api/errors
compat_dir=hack/compat/cluster-api-errors
compat_pseudo=v0.0.0-00010101000000-000000000000

# scrub keeps machine paths and registry hosts out of the report: the repository, the module cache, the
# temporary directory and the home directory go, and so does every address; the registries go.env names
# are "the module proxy" (GOPROXY) and "the checksum database" (GOSUMDB).
modcache="$(go env GOMODCACHE)"
scrub_args=(-e "s|$root/||g" -e "s|$root|.|g" -e "s|$work/||g" -e "s|$work|.|g" -e "s|$modcache/||g" -e "s|$modcache|the module cache|g")
scrub_args+=(-e 's|https\?://[^[:space:]]*|the module proxy|g')
for p in $(go env GOPROXY | tr ',|' '  '); do
	host="${p#*://}"
	host="${host%%/*}"
	[[ -n "$host" && "$host" != direct && "$host" != off ]] && scrub_args+=(-e "s|${host//./\\.}|the module proxy|g")
done
sumdb="$(go env GOSUMDB)"
sumdb="${sumdb%% *}"
sumdb="${sumdb#*://}"
[[ -n "$sumdb" && "$sumdb" != off ]] && scrub_args+=(-e "s|${sumdb//./\\.}|the checksum database|g")
[[ -n "${HOME:-}" && "$HOME" != / ]] && scrub_args+=(-e "s|$HOME/|~/|g")
scrub() { sed "${scrub_args[@]}"; }

# finish prints the report of what is known so far (and why the bump stopped) and exits.
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
		if [[ -f "$work/pins" && -s "$work/pins" ]]; then
			echo "## Pins that changed (go.mod: direct requirements and replaces)"
			sed 's/^/  /' "$work/pins"
			echo
		fi
		if [[ -s "$work/notes" ]]; then
			echo "## Notes"
			sed 's/^/  /' "$work/notes"
			echo
		fi
		if [[ -s "$work/probe" ]]; then
			echo "## Newer versions asked for by exact version (the next patch and minor; what the module proxy answered)"
			sed 's/^/  /' "$work/probe"
			echo
		fi
		if [[ -f "$work/after.json" ]]; then
			go run ./generator/bumpreport diff "$work/before.json" "$work/after.json"
		fi
	} | scrub | tee "$report"
	log "report written to ${report#"$root"/}"
	exit "$status"
}
note() { echo "$*" >>"$work/notes"; }
: >"$work/notes"

# version prints the version of module $2 that the go.mod in directory $1 requires.
version() { (cd "$1" && go list -m -f '{{.Version}}' "$2" 2>/dev/null) || true; }
# module_dir prints the module cache directory of module $1 at version $2 (downloading it), or nothing.
module_dir() { (cd "$work" && GOFLAGS= go mod download -json "$1@$2" 2>/dev/null | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') || true; }

before_capi="$(version . sigs.k8s.io/cluster-api)"
before_k8s="$(version . k8s.io/apimachinery)"
cp go.mod "$work/before.mod"
log "snapshot of the model at the current pins (sigs.k8s.io/cluster-api $before_capi)"
go run ./generator/bumpreport snapshot -o "$work/before.json"
# The Kubernetes libraries at k8s.io/apimachinery's version move with it.
k8s_libs=()
while read -r m v; do
	[[ "$m" == k8s.io/* && "$v" == "$before_k8s" && "$m" != k8s.io/apimachinery ]] && k8s_libs+=("$m")
done < <(go list -m -f '{{.Path}} {{.Version}}' $(go mod edit -json | sed -n 's/^[[:space:]]*"Path": "\(k8s\.io\/[^"]*\)".*/\1/p' | sort -u))

# The modules whose versions change, old versions first, for the comments in apis/upstream/table.go.
declare -A old_versions=()
for m in sigs.k8s.io/cluster-api sigs.k8s.io/cluster-api/api "${providers[@]%@*}"; do old_versions[$m]="$(version . "$m")"; done

# From here on every go command may complete go.mod and go.sum for the new pins; go mod tidy cleans up.
export GOFLAGS=-mod=mod

# 2. The pins, with one go get: each PROVIDER module through the packages apis/upstream mirrors from it
# (its root package is usually its manager, whose dependencies the module proxy does not all serve: CAPZ's
# Azure Service Operator), a module the table mirrors nothing from as itself, and CAPI. go get moves
# whatever the new versions require, and downgrades what requires versions a bump back leaves.
table_pkgs="$(sed -n 's/^[[:space:]]*{Path: "\([^"]*\)".*/\1/p' apis/upstream/table.go)"
gets=()
for p in "${providers[@]}"; do
	if [[ "$p" != *@* ]]; then
		echo "PROVIDER entries are <module>@<version>, got $p" >"$work/why"
		finish 2 "a PROVIDER entry has no version"
	fi
	m="${p%@*}" v="${p##*@}"
	pkgs="$(grep "^$m/" <<<"$table_pkgs" || true)"
	if [[ "$v" == none || -z "$pkgs" ]]; then
		gets+=("$p")
	else
		while read -r pkg; do gets+=("$pkg@$v"); done <<<"$pkgs"
	fi
done
capi_gets=("sigs.k8s.io/cluster-api@$capi")
capi_dir="$(module_dir sigs.k8s.io/cluster-api "$capi")"
# From v1.14 CAPI's API packages are their own module; before, the core module holds them, and the API
# module must go (both would provide sigs.k8s.io/cluster-api/api/...). Asked by exact version: the
# module proxy serves versions it does not list.
api_dir="$(module_dir sigs.k8s.io/cluster-api/api "$capi")"
if [[ -n "$api_dir" ]]; then
	capi_gets+=("sigs.k8s.io/cluster-api/api@$capi")
else
	capi_gets+=("sigs.k8s.io/cluster-api/api@none")
fi
# sigs.k8s.io/cluster-api/errors: in the CAPI module before v1.14, in the API module's deprecated/errors
# from it. Where CAPI no longer has it, hack/compat/cluster-api-errors provides it to the releases that
# still import it (go get loads their packages); it goes again below if none does.
go mod edit -dropreplace="$compat_mod" -droprequire="$compat_mod"
(cd tests/alerts && go mod edit -dropreplace="$compat_mod" -droprequire="$compat_mod")
compat=""
if [[ ! -d "$capi_dir/errors" && -n "$api_dir" && -d "$api_dir/deprecated/errors" ]]; then
	compat=1
	go mod edit -require="$compat_mod@$compat_pseudo" -replace="$compat_mod=./$compat_dir"
	(cd "$compat_dir" && go mod edit -require="sigs.k8s.io/cluster-api/api@$capi")
fi
log "go get ${capi_gets[*]} ${gets[*]}"
if ! go get "${capi_gets[@]}" "${gets[@]}" >"$work/why" 2>&1; then
	finish 1 "the root module does not resolve at the new pins (go get)"
fi
after_k8s="$(version . k8s.io/apimachinery)"
if [[ "$after_k8s" != "$before_k8s" && ${#k8s_libs[@]} -gt 0 ]]; then
	lag=()
	for m in "${k8s_libs[@]}"; do
		v="$(version . "$m")"
		[[ -n "$v" && "$v" != "$after_k8s" ]] && lag+=("$m@$after_k8s")
	done
	if [[ ${#lag[@]} -gt 0 ]]; then
		log "the Kubernetes libraries follow k8s.io/apimachinery $after_k8s: ${lag[*]}"
		edit=() moved=() dropped=()
		for l in "${lag[@]}"; do
			# A library newer than the target release (k8s.io/streaming is new in 0.36) has no such version:
			# its requirement goes, and whatever still needs it brings it back at its own version.
			if [[ -n "$(module_dir "${l%@*}" "$after_k8s")" ]]; then
				edit+=(-require="$l") moved+=("${l%@*}")
			else
				edit+=(-droprequire="${l%@*}") dropped+=("${l%@*}")
			fi
		done
		go mod edit "${edit[@]}"
		[[ ${#moved[@]} -gt 0 ]] && note "Kubernetes libraries moved with k8s.io/apimachinery ($before_k8s -> $after_k8s): ${moved[*]}"
		[[ ${#dropped[@]} -gt 0 ]] && note "Kubernetes libraries with no $after_k8s, their requirement dropped: ${dropped[*]}"
	fi
fi
for p in "${providers[@]}"; do
	m="${p%@*}" want="${p##*@}"
	[[ "$want" == none ]] && continue
	got="$(version . "$m")"
	[[ "$got" != "$want" ]] && note "$m: asked for $want, go.mod has $got (another module requires it)"
done

# Where the core manager's main package and manifests are: the module root before v1.14, core/ from it.
if [[ -f "$capi_dir/core/main.go" ]]; then
	sed -i 's|^\(\t_ "sigs.k8s.io/cluster-api\)"$|\1/core"|' hack/capi/tools.go
	sed -i 's|\[capi-manager\]=sigs.k8s.io/cluster-api$|[capi-manager]=sigs.k8s.io/cluster-api/core|' hack/build-capi.sh
	sed -i 's|{Module: "sigs.k8s.io/cluster-api", File: "config/|{Module: "sigs.k8s.io/cluster-api", File: "core/config/|' apis/upstream/*.go
else
	sed -i 's|^\(\t_ "sigs.k8s.io/cluster-api\)/core"$|\1"|' hack/capi/tools.go
	sed -i 's|\[capi-manager\]=sigs.k8s.io/cluster-api/core$|[capi-manager]=sigs.k8s.io/cluster-api|' hack/build-capi.sh
	sed -i 's|{Module: "sigs.k8s.io/cluster-api", File: "core/config/|{Module: "sigs.k8s.io/cluster-api", File: "config/|' apis/upstream/*.go
fi
gofmt -w hack/capi/tools.go # the imports in order again

# The Agent types (ours) import the errors package where the pinned CAPI keeps it.
if [[ -d "$capi_dir/errors" ]]; then
	sed -i 's|sigs.k8s.io/cluster-api/api/deprecated/errors|sigs.k8s.io/cluster-api/errors|g' apis/upstream/agent/*/*.go
elif [[ -n "$api_dir" && -d "$api_dir/deprecated/errors" ]]; then
	sed -i 's|sigs.k8s.io/cluster-api/errors|sigs.k8s.io/cluster-api/api/deprecated/errors|g' apis/upstream/agent/*/*.go
fi
if [[ -n "$compat" ]]; then
	if ! go run ./generator/bumpreport importers "$compat_mod" >"$work/importers" 2>"$work/why"; then
		finish 1 "cannot tell which mirrored packages import $compat_mod"
	fi
	if [[ -s "$work/importers" ]]; then
		log "$compat_mod: from $compat_dir for $(cut -d' ' -f2,3 "$work/importers" | sort -u | tr '\n' ' ')"
		(cd tests/alerts && go mod edit -replace="$compat_mod=../../$compat_dir")
		note "$compat_mod comes from $compat_dir (replace in go.mod and tests/alerts/go.mod): CAPI $capi no longer has it" \
			"(it moved to sigs.k8s.io/cluster-api/api/deprecated/errors), and these releases import it:"
		cut -d' ' -f2,3 "$work/importers" | sort -u | sed 's/^/  /' >>"$work/notes"
		note "  To drop it: bump those providers to releases that import sigs.k8s.io/cluster-api/api/deprecated/errors" \
			"(or CAPI to one that has the old path again); make bump then drops the replace, and the directory can go."
	else
		go mod edit -dropreplace="$compat_mod" -droprequire="$compat_mod"
	fi
fi

log "hack/capi: the CAPI managers the e2e tests run"
# CAPI's go.mod requires its API module at v0.0.0 with a replace to ./api, which only CAPI's own build
# honours: a module that requires CAPI must require the API module at the same version itself.
if ! (cd hack/capi && go get "${capi_gets[@]}" && go mod tidy) >"$work/why" 2>&1; then
	finish 1 "hack/capi does not resolve sigs.k8s.io/cluster-api@$capi"
fi

# controller-gen writes the private CRDs, which must equal the CRDs every mirrored module publishes
# (tests/conformance); those were generated by the modules' own controller-gen versions, so the one
# hack/tools pins stays unless CONTROLLER_GEN_VERSION names another: CAPI's Makefile pin is not enough (v0.21.0,
# CAPI v1.14's, writes an enum that CAPA's and CAPG's published CRDs, from v0.19 and v0.20, have as an
# allOf, and the apiserver's validation errors tell them apart). The report lists the versions.
cg_pinned="$(version hack/tools sigs.k8s.io/controller-tools)"
cg_capi="$(sed -n 's/^CONTROLLER_GEN_VER[[:space:]]*:=[[:space:]]*\(v[^[:space:]]*\).*/\1/p' "$capi_dir/Makefile" | head -n 1)"
cg="${CONTROLLER_GEN_VERSION:-$cg_pinned}"
if [[ -n "$cg" && "$cg" != "$cg_pinned" ]]; then
	log "hack/tools: controller-gen $cg"
	if ! (cd hack/tools && go get "sigs.k8s.io/controller-tools@$cg" && go mod tidy) >"$work/why" 2>&1; then
		finish 1 "hack/tools does not resolve sigs.k8s.io/controller-tools@$cg"
	fi
fi
note "controller-gen: hack/tools pins $(version hack/tools sigs.k8s.io/controller-tools) (CONTROLLER_GEN_VERSION=<version> moves it);" \
	"CAPI $capi's Makefile pins ${cg_capi:-none}. The published CRDs the private ones must equal were generated with:"
go run ./generator/bumpreport crdtools 2>&1 | sed 's/^/  /' >>"$work/notes" || true

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
go run ./generator/bumpreport pins "$work/before.mod" go.mod >"$work/pins" 2>/dev/null || true
if grep -q '"error":\|"brokenModules":\|"missingRoles":' "$work/after.json"; then
	: >"$work/why"
	finish 1 "the generator cannot build its model of every package at the new pins (see below)"
fi

log "make generate"
if ! make generate >"$work/why" 2>&1; then
	finish 1 "make generate failed"
fi
if ! { go mod tidy && (cd tests/alerts && go mod tidy); } >"$work/why" 2>&1; then
	finish 1 "go mod tidy failed after generation"
fi
go run ./generator/bumpreport pins "$work/before.mod" go.mod >"$work/pins" 2>/dev/null || true
log "go build ./..."
if ! { go build ./... && (cd tests/alerts && go build ./...); } >"$work/why" 2>&1; then
	finish 1 "the project does not build at the new pins (go build ./...)"
fi
log "asking the module proxy for newer versions"
go run ./generator/bumpreport probe >"$work/probe" 2>&1 || true
finish 0
