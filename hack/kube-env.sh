#!/usr/bin/env bash
# Run a throwaway real Kubernetes control plane (etcd, kube-apiserver,
# kube-controller-manager) on free 127.0.0.1 ports, for tests.
#
#   hack/kube-env.sh up DIR                 # start; prints DIR/env (sourceable) as the last stdout line
#   hack/kube-env.sh down DIR               # stop (idempotent); DIR and its logs are kept
#   hack/kube-env.sh stop-apiserver DIR     # stop kube-apiserver only (etcd and the rest keep running)
#   hack/kube-env.sh start-apiserver DIR    # start it again: same port, flags and etcd; waits for /readyz
#   hack/kube-env.sh restart-apiserver DIR  # both
#
# DIR gets: *.log, *.pid, certs/keys, tokens.csv, admin.kubeconfig, alice.kubeconfig, env, and
# kube-apiserver.args (its flags, NUL-separated, for start-apiserver).
# Binaries: $KUBE_BIN_DIR if it already holds them, else hack/build-kube.sh builds/caches them.
# Users: "admin" (group system:masters) and "alice" (no groups beyond system:authenticated),
# both bearer tokens. Only bash, coreutils, openssl and the built binaries are used.
set -euo pipefail

hack_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
components=(kube-controller-manager kube-apiserver etcd) # stop order; started in reverse
interrupted=""

log() { echo "kube-env: $*" >&2; }
die() { log "$*"; exit 1; }

# alive PID: the process exists and is not a zombie (with an init that does not reap,
# kill -0 would succeed forever).
alive() {
	local stat
	stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
	stat="${stat##*) }"
	[[ "${stat:0:1}" != Z ]]
}

# gone PID: wait up to 5s for the process to end.
gone() {
	local i
	for ((i = 0; i < 50; i++)); do alive "$1" || return 0; sleep 0.1; done
	return 1
}

# PIDs this invocation started, by component name. Until the forked child has
# exec'd its binary its command line is this script's, so pid_of's command-line
# guard cannot tell it is ours; for these PIDs being alive is enough (the child
# is ours and its PID cannot be reused before we reap it).
declare -A started=()

# pid_of DIR NAME: the PID in DIR/NAME.pid if it runs and is ours (started by this
# invocation, or its command line mentions DIR/; guards against PID reuse).
pid_of() {
	local pid cmdline
	pid="$(cat "$1/$2.pid" 2>/dev/null)" && alive "$pid" || return 1
	if [[ "$1" == "${dir:-}" && "${started[$2]:-}" == "$pid" ]]; then
		echo "$pid"
		return 0
	fi
	cmdline="$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline")" || return 1
	[[ "$cmdline" == *"$1/"* ]] && echo "$pid"
}

down() {
	local name pid
	for name in "${components[@]}"; do
		if pid="$(pid_of "$1" "$name")"; then
			kill -TERM "$pid" 2>/dev/null || true
			gone "$pid" || { log "$name ($pid) ignored TERM, killing"; kill -KILL "$pid" 2>/dev/null || true; gone "$pid" || true; }
		fi
		rm -f "$1/$name.pid"
	done
}

# Ports already in use (any state) on this host, from /proc/net/tcp{,6}.
declare -A taken=()
scan_ports() {
	local f local_addr
	for f in /proc/net/tcp /proc/net/tcp6; do
		[[ -r "$f" ]] || continue
		while read -r _ local_addr _; do
			[[ "$local_addr" == *:* ]] && taken[$((16#${local_addr##*:}))]=1
		done < <(tail -n +2 "$f")
	done
}

# free_port VAR: set VAR to a random unused port below the ephemeral range (so outgoing
# connections never take it), not handed out before by this run.
free_port() {
	local lo hi port
	read -r lo _ </proc/sys/net/ipv4/ip_local_port_range
	hi=$((lo > 12000 ? lo : 32768))
	while :; do
		port=$((10000 + (RANDOM * 32768 + RANDOM) % (hi - 10000)))
		[[ -z "${taken[$port]:-}" ]] && break
	done
	taken[$port]=1
	printf -v "$1" %s "$port"
}

# start NAME ARGS...: run a binary in the background, immune to SIGHUP, logging to DIR/NAME.log.
start() {
	local name="$1"
	shift
	nohup "$bin_dir/$name" "$@" </dev/null >>"$dir/$name.log" 2>&1 &
	started[$name]=$!
	echo $! >"$dir/$name.pid"
}

# wait_for NAME SECONDS CMD...: poll CMD until it succeeds; fail if NAME dies or time runs out.
wait_for() {
	local name="$1" timeout="$2" deadline=$((SECONDS + $2))
	shift 2
	until "$@" >/dev/null 2>&1; do
		[[ -z "$interrupted" ]] || return 1
		pid_of "$dir" "$name" >/dev/null || { log "$name exited"; return 1; }
		((SECONDS < deadline)) || { log "timed out after ${timeout}s waiting for $name"; return 1; }
		sleep 0.2
	done
}

tcp_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
kubectl() { "$bin_dir/kubectl" --request-timeout=2s "$@"; }

# new_cert NAME CN EXTENSIONS [CA]: EC P-256 key + cert in DIR; a self-signed CA when CA is empty.
new_cert() {
	if [[ -z "${4:-}" ]]; then
		openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
			-keyout "$dir/$1.key" -out "$dir/$1.crt" -days 3650 -subj "/CN=$2" \
			-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
	else
		openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -keyout "$dir/$1.key" -subj "/CN=$2" |
			openssl x509 -req -CA "$dir/$4.crt" -CAkey "$dir/$4.key" -days 3650 \
				-set_serial "0x$(openssl rand -hex 16)" -out "$dir/$1.crt" -extfile <(printf '%b' "$3")
	fi
}

# write_kubeconfig USER TOKEN: DIR/USER.kubeconfig for the API server.
write_kubeconfig() {
	cat >"$dir/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kube-env
  cluster:
    server: $server
    certificate-authority-data: $(base64 -w0 "$dir/ca.crt")
users:
- name: $1
  user:
    token: $2
contexts:
- name: $1
  context: {cluster: kube-env, user: $1}
current-context: $1
EOF
}

# launch: pick ports and start etcd, kube-apiserver, kube-controller-manager; wait until ready.
launch() {
	local etcd_port peer_port api_port kcm_port
	rm -f "$dir"/*.log
	scan_ports
	free_port etcd_port && free_port peer_port && free_port api_port && free_port kcm_port
	server="https://127.0.0.1:$api_port"
	write_kubeconfig admin "$admin_token"
	write_kubeconfig alice "$alice_token"

	# etcd: fresh data dir each time; no fsync (test data only).
	log "starting etcd on 127.0.0.1:$etcd_port"
	rm -rf "$dir/etcd"
	start etcd --name=kube-env --data-dir="$dir/etcd" --unsafe-no-fsync --log-level=warn \
		--listen-client-urls="http://127.0.0.1:$etcd_port" --advertise-client-urls="http://127.0.0.1:$etcd_port" \
		--listen-peer-urls="http://127.0.0.1:$peer_port" --initial-advertise-peer-urls="http://127.0.0.1:$peer_port" \
		--initial-cluster="kube-env=http://127.0.0.1:$peer_port"
	wait_for etcd 20 tcp_open "$etcd_port" || return 1

	log "starting kube-apiserver on $server"
	# --advertise-address + --endpoint-reconciler-type=none: no routable host IP needed.
	apiserver_args=(--etcd-servers="http://127.0.0.1:$etcd_port" \
		--bind-address=127.0.0.1 --secure-port="$api_port" \
		--advertise-address=127.0.0.1 --endpoint-reconciler-type=none \
		--tls-cert-file="$dir/apiserver.crt" --tls-private-key-file="$dir/apiserver.key" \
		--client-ca-file="$dir/ca.crt" --token-auth-file="$dir/tokens.csv" --authorization-mode=RBAC \
		--requestheader-client-ca-file="$dir/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
		--requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
		--requestheader-extra-headers-prefix=X-Remote-Extra- \
		--proxy-client-cert-file="$dir/front-proxy-client.crt" --proxy-client-key-file="$dir/front-proxy-client.key" \
		--service-account-issuer=https://kubernetes.default.svc \
		--service-account-key-file="$dir/sa.pub" --service-account-signing-key-file="$dir/sa.key" \
		--disable-admission-plugins=ServiceAccount --service-cluster-ip-range=10.0.0.0/24)
	printf '%s\0' "${apiserver_args[@]}" >"$dir/kube-apiserver.args"
	start kube-apiserver "${apiserver_args[@]}"
	wait_for kube-apiserver 90 kubectl --kubeconfig="$dir/admin.kubeconfig" get --raw /readyz || return 1

	log "starting kube-controller-manager on 127.0.0.1:$kcm_port"
	start kube-controller-manager --controllers=garbagecollector,namespace,clusterrole-aggregation \
		--kubeconfig="$dir/admin.kubeconfig" --authentication-kubeconfig="$dir/admin.kubeconfig" \
		--authorization-kubeconfig="$dir/admin.kubeconfig" --use-service-account-credentials=false \
		--bind-address=127.0.0.1 --secure-port="$kcm_port" --leader-elect=false
	wait_for kube-controller-manager 30 kubectl --kubeconfig=/dev/null --server="https://127.0.0.1:$kcm_port" \
		--insecure-skip-tls-verify --token="$admin_token" get --raw /healthz || return 1
}

# port_clash: did a component fail because another process took its port meanwhile?
port_clash() {
	local f
	for f in "$dir"/*.log; do [[ -f "$f" && "$(<"$f")" == *"address already in use"* ]] && return 0; done
	return 1
}

dump_logs() {
	local f
	for f in "$dir"/*.log; do [[ -f "$f" ]] && { echo "----- last lines of $f" >&2; tail -n 20 "$f" >&2; }; done
	return 0
}

up() {
	mkdir -p "$1"
	dir="$(cd "$1" && pwd)"
	local name attempt
	for name in "${components[@]}"; do
		! pid_of "$dir" "$name" >/dev/null || die "$name already runs in $dir; run: $0 down $dir"
	done
	if ! command -v openssl >/dev/null; then
		log "installing openssl"
		apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl >&2
	fi

	# Binaries: reuse $KUBE_BIN_DIR if complete, else build (cached) with build-kube.sh.
	bin_dir="${KUBE_BIN_DIR:-}"
	for name in etcd kube-apiserver kube-controller-manager kubectl; do
		if [[ -z "$bin_dir" || ! -x "$bin_dir/$name" ]]; then
			bin_dir="$("$hack_dir/build-kube.sh" | tail -n 1)"
			break
		fi
	done

	# From here on, a failure or interrupt stops whatever was started.
	trap 'dump_logs; down "$dir"; log "up failed; logs are in $dir"' EXIT
	# (INT/TERM only set a flag: exiting from inside wait_for would send these messages to /dev/null.)
	trap 'interrupted=1' INT TERM

	# Serving/client CA, front-proxy CA + client cert, service-account key pair, tokens.
	log "generating certificates and tokens in $dir"
	{
		new_cert ca kube-env-ca ""
		new_cert apiserver 127.0.0.1 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature' ca
		new_cert front-proxy-ca kube-env-front-proxy-ca ""
		new_cert front-proxy-client front-proxy-client 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature' front-proxy-ca
		openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$dir/sa.key"
		openssl pkey -in "$dir/sa.key" -pubout -out "$dir/sa.pub"
	} 2>"$dir/openssl.log"
	admin_token="$(openssl rand -hex 32)" alice_token="$(openssl rand -hex 32)"
	(umask 077 && printf '%s,admin,admin,system:masters\n%s,alice,alice\n' "$admin_token" "$alice_token" >"$dir/tokens.csv")

	# Ports are checked free, but a concurrent environment may grab one first: retry then.
	for attempt in 1 2 3; do
		launch && break
		if [[ -n "$interrupted" ]]; then exit 130; fi
		if ((attempt == 3)) || ! port_clash; then exit 1; fi
		log "port clash, retrying with other ports"
		down "$dir"
	done
	if [[ -n "$interrupted" ]]; then exit 130; fi

	{
		printf 'export %s=%q\n' KUBE_APISERVER_URL "$server" KUBE_CA_FILE "$dir/ca.crt" \
			KUBE_ADMIN_TOKEN "$admin_token" KUBE_USER_TOKEN "$alice_token" KUBE_BIN_DIR "$bin_dir" \
			KUBECONFIG_ADMIN "$dir/admin.kubeconfig" KUBECONFIG_USER "$dir/alice.kubeconfig" \
			KUBE_CA_KEY "$dir/ca.key" KUBE_FRONT_PROXY_CA_FILE "$dir/front-proxy-ca.crt" \
			KUBE_FRONT_PROXY_CLIENT_CERT "$dir/front-proxy-client.crt" \
			KUBE_FRONT_PROXY_CLIENT_KEY "$dir/front-proxy-client.key"
	} >"$dir/env"
	trap - EXIT INT TERM
	log "up: $server (source $dir/env; stop with: $0 down $dir)"
	echo "$dir/env"
}

# stop_apiserver DIR: stop kube-apiserver only.
stop_apiserver() {
	local pid
	if pid="$(pid_of "$1" kube-apiserver)"; then
		kill -TERM "$pid" 2>/dev/null || true
		gone "$pid" || { log "kube-apiserver ($pid) still runs 5s after TERM (draining), killing"; kill -KILL "$pid" 2>/dev/null || true; gone "$pid" || true; }
	fi
	rm -f "$1/kube-apiserver.pid"
}

# start_apiserver DIR: start kube-apiserver again with the flags `up` gave it (same port, same etcd).
start_apiserver() {
	dir="$1"
	[[ -f "$dir/kube-apiserver.args" && -f "$dir/env" ]] || die "no environment in $dir; run: $0 up $dir"
	! pid_of "$dir" kube-apiserver >/dev/null || die "kube-apiserver already runs in $dir"
	bin_dir="$(sed -n "s/^export KUBE_BIN_DIR=//p" "$dir/env")"
	local args=()
	mapfile -d '' args <"$dir/kube-apiserver.args"
	log "starting kube-apiserver again"
	start kube-apiserver "${args[@]}"
	wait_for kube-apiserver 90 kubectl --kubeconfig="$dir/admin.kubeconfig" get --raw /readyz || die "kube-apiserver did not become ready; see $dir/kube-apiserver.log"
}

[[ $# -eq 2 ]] || die "usage: $0 up|down|stop-apiserver|start-apiserver|restart-apiserver DIR"
case "$1" in
up) up "$2" ;;
down) if [[ -d "$2" ]]; then down "$(cd "$2" && pwd)"; fi ;;
stop-apiserver) stop_apiserver "$(cd "$2" && pwd)" ;;
start-apiserver) start_apiserver "$(cd "$2" && pwd)" ;;
restart-apiserver)
	stop_apiserver "$(cd "$2" && pwd)"
	start_apiserver "$(cd "$2" && pwd)"
	;;
*) die "usage: $0 up|down|stop-apiserver|start-apiserver|restart-apiserver DIR" ;;
esac
