#!/usr/bin/env bash
# Build the real Cluster API managers (core, kubeadm bootstrap, kubeadm control plane) from the
# scratch module in hack/capi (version pinned by its go.mod) into a cache directory, for the e2e tests
# that run them through the proxy.
#
# Usage: hack/build-capi.sh        -> logs on stderr, the bin dir as the last stdout line.
# Env:   CAPI_BIN_DIR overrides the cache dir (default under $XDG_CACHE_HOME or ~/.cache).
# Binaries: capi-manager, kubeadm-bootstrap-manager, kubeadm-control-plane-manager.
set -euo pipefail

hack_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$hack_dir/lib.sh"
mod_dir="$hack_dir/capi"
cd "$mod_dir"
export GOWORK=off CGO_ENABLED=0

capi_version="$(awk '$1 == "sigs.k8s.io/cluster-api" { print $2; exit } $1 == "require" && $2 == "sigs.k8s.io/cluster-api" { print $3; exit }' go.mod)"
go_version="$(go env GOVERSION)"
bin_dir="${CAPI_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hypershift-capi-proxy/capi-${capi_version}-${go_version}/bin}"
stamp="$bin_dir/.stamp"
want_stamp="cluster-api=${capi_version} go=${go_version}"
declare -A pkgs=(
	[capi-manager]=sigs.k8s.io/cluster-api/core
	[kubeadm-bootstrap-manager]=sigs.k8s.io/cluster-api/bootstrap/kubeadm
	[kubeadm-control-plane-manager]=sigs.k8s.io/cluster-api/controlplane/kubeadm
)

up_to_date() {
	local b
	for b in "${!pkgs[@]}"; do [[ -x "$bin_dir/$b" ]] || return 1; done
	[[ -f "$stamp" && "$(cat "$stamp")" == "$want_stamp" ]]
}

if up_to_date; then
	echo "build-capi: up to date ($want_stamp) in $bin_dir" >&2
else
	echo "build-capi: building $want_stamp into $bin_dir" >&2
	begin_build "$bin_dir"
	start=$SECONDS
	for b in "${!pkgs[@]}"; do
		go build -trimpath -ldflags "-X sigs.k8s.io/cluster-api/version.gitVersion=${capi_version}" -o "$tmp/$b" "${pkgs[$b]}"
	done
	rm -f "$stamp"
	for b in "${!pkgs[@]}"; do mv -f "$tmp/$b" "$bin_dir/$b"; done
	echo "$want_stamp" >"$tmp/.stamp"
	mv -f "$tmp/.stamp" "$stamp"
	echo "build-capi: built in $((SECONDS - start))s" >&2
fi

echo "$bin_dir"
