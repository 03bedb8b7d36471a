#!/usr/bin/env bash
# Build real kube-apiserver, kube-controller-manager, kubectl and etcd from the scratch
# module in hack/kube (versions pinned by its go.mod) into a cache directory.
#
# Usage: hack/build-kube.sh        -> logs on stderr, the bin dir as the last stdout line.
# Env:   KUBE_BIN_DIR overrides the cache dir (default under $XDG_CACHE_HOME or ~/.cache).
#
# A cold build takes several minutes on 2 cores; later runs skip it when all binaries
# exist and the stamp file matches the kubernetes + go versions.
set -euo pipefail

hack_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$hack_dir/lib.sh"
mod_dir="$hack_dir/kube"
cd "$mod_dir"
export GOWORK=off CGO_ENABLED=0 # never pick up a go.work; static binaries, no C toolchain

# Single source of truth: the version pinned in hack/kube/go.mod.
kube_version="$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' go.mod)"
go_version="$(go env GOVERSION)" # the toolchain go.mod selects, e.g. go1.26.8
bin_dir="${KUBE_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hypershift-capi-proxy/kube-${kube_version}-${go_version}/bin}"
stamp="$bin_dir/.stamp"
want_stamp="kubernetes=${kube_version} go=${go_version}"
bins=(kube-apiserver kube-controller-manager kubectl etcd)

up_to_date() {
	local b
	for b in "${bins[@]}"; do [[ -x "$bin_dir/$b" ]] || return 1; done
	[[ -f "$stamp" && "$(cat "$stamp")" == "$want_stamp" ]]
}

if up_to_date; then
	echo "build-kube: up to date ($want_stamp) in $bin_dir" >&2
else
	echo "build-kube: building $want_stamp into $bin_dir (cold build: several minutes)" >&2
	begin_build "$bin_dir"

	# Make /version report the real release instead of v0.0.0-master.
	minor="${kube_version#v1.}"
	minor="${minor%%.*}"
	ldflags=""
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
	done

	start=$SECONDS
	go build -trimpath -ldflags "$ldflags" -o "$tmp/" \
		k8s.io/kubernetes/cmd/kube-apiserver \
		k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kubectl
	# etcd's main package path ends in /v3, so name the binary explicitly.
	go build -trimpath -o "$tmp/etcd" go.etcd.io/etcd/server/v3

	# Invalidate the stamp first, rename each binary into place (atomic per file, and
	# running processes keep their old inode), then write the stamp last.
	rm -f "$stamp"
	for b in "${bins[@]}"; do mv -f "$tmp/$b" "$bin_dir/$b"; done
	echo "$want_stamp" >"$tmp/.stamp"
	mv -f "$tmp/.stamp" "$stamp"
	echo "build-kube: built in $((SECONDS - start))s" >&2
fi

echo "$bin_dir"
