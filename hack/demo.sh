#!/usr/bin/env bash
# The main job, locally: a real kube-apiserver with the private CRDs (and an older release of the upstream
# CAPI CRDs beside them, as on a management cluster), the proxy in front of it, and kubectl creating CAPI
# objects through the proxy; then it shows where they landed. DEMO_KEEP=1 leaves everything running.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
dir="$(mktemp -d /tmp/capi-proxy-demo-XXXX)"
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "control plane (etcd, kube-apiserver, kube-controller-manager) in $dir"
hack/kube-env.sh up "$dir" >/dev/null
# shellcheck disable=SC1091
source "$dir/env"
kubectl=("$KUBE_BIN_DIR/kubectl" --kubeconfig "$KUBECONFIG_ADMIN")
proxy_pid=""
cleanup() {
	[[ -n "$proxy_pid" ]] && kill "$proxy_pid" 2>/dev/null || true
	if [[ -z "${DEMO_KEEP:-}" ]]; then hack/kube-env.sh down "$dir"; fi
}
trap cleanup EXIT

say "the platform's own CAPI CRDs (v1.10.10)"
platform="$(go mod download -json sigs.k8s.io/cluster-api@v1.10.10 | sed -n 's/.*"Dir": "\(.*\)",/\1/p')"
"${kubectl[@]}" apply -f "$platform/config/crd/bases/" >/dev/null
"${kubectl[@]}" wait --for condition=established --timeout=60s crd --all >/dev/null

say "the proxy (TLS on 127.0.0.1:18443, pass-through authentication)"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
	-keyout "$dir/proxy.key" -out "$dir/proxy.crt" 2>/dev/null
go build -o bin/capi-proxy ./proxy
bin/capi-proxy --listen 127.0.0.1:18443 --kubeconfig "$KUBECONFIG_ADMIN" \
	--tls-cert-file "$dir/proxy.crt" --tls-private-key-file "$dir/proxy.key" >"$dir/proxy.log" 2>&1 &
proxy_pid=$!
via_proxy=("$KUBE_BIN_DIR/kubectl" --server https://127.0.0.1:18443 --certificate-authority "$dir/proxy.crt"
	--token "$KUBE_ADMIN_TOKEN" --cache-dir "$dir/kubectl-cache")
for _ in $(seq 50); do "${via_proxy[@]}" get --raw /version >/dev/null 2>&1 && break; sleep 0.2; done

say "the private CRDs beside them, converting versions with the proxy's webhook (install-crds)"
bin/capi-proxy install-crds --kubeconfig "$KUBECONFIG_ADMIN" --webhook-url https://127.0.0.1:18443/convert \
	--ca-bundle-file "$dir/proxy.crt" apis/private/crds/
"${kubectl[@]}" get crd -o custom-columns=NAME:.metadata.name,VERSIONS:.spec.versions[*].name,CONVERSION:.spec.conversion.strategy |
	grep -E 'NAME|machines\.|clusters\.'

say "a client (kubectl) creates a Cluster and a Machine in cluster.x-k8s.io/v1beta2 through the proxy"
"${via_proxy[@]}" create namespace demo
cat <<'YAML' | "${via_proxy[@]}" create -f -
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: hc1, namespace: demo}
spec:
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: AWSCluster, name: hc1}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Machine
metadata:
  name: hc1-m1
  namespace: demo
  labels: {cluster.x-k8s.io/cluster-name: hc1}
spec:
  clusterName: hc1
  bootstrap: {dataSecretName: hc1-m1-userdata}
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: AWSMachine, name: hc1-m1}
YAML

say "what the client sees through the proxy: kubectl get machines -o yaml"
"${via_proxy[@]}" get machines -n demo -o yaml | grep -E 'apiVersion|apiGroup|cluster-name|kind: Machine'

say "the same Machine read by a v1beta1 client: converted by the proxy's webhook, references by apiVersion"
"${via_proxy[@]}" get machines.v1beta1.cluster.x-k8s.io -n demo -o yaml 2>/dev/null | grep -E '^  kind|apiVersion|cluster-name'

say "where it landed: the apiserver directly, machines.cluster.hypershift.openshift.io"
"${kubectl[@]}" get machines.cluster.hypershift.openshift.io -n demo -o yaml | grep -E 'apiVersion|apiGroup|cluster-name'
say "and the platform's own machines.cluster.x-k8s.io is untouched"
"${kubectl[@]}" get machines.cluster.x-k8s.io -n demo

if [[ -n "${DEMO_KEEP:-}" ]]; then
	say "left running: source $dir/env; proxy on https://127.0.0.1:18443 (pid $proxy_pid); stop with hack/kube-env.sh down $dir"
	trap - EXIT
fi
