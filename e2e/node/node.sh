# shellcheck shell=sh
# shellcheck disable=SC2016
# The real node of e2e/cluster (sourced by it): kubelet, containerd (1.7 or 2.x), runc
# and the CNI plugins, on this machine, beside the control plane.  See e2e/README.md.
#
# Everything the node writes lives under $STATE/node/root, bound over the usual
# paths (/var/lib/kubelet, /etc/containerd, /var/run/cdi, ...) inside a mount
# namespace of its own (ns.sh), so the manifests' hostPath volumes mean what they
# mean on a real node and nothing leaks onto the host's filesystem.  What a node
# cannot keep in a mount namespace is host-wide and removed by node_cleanup: the
# bridge ddcni0, the iptables rules, the kubepods cgroups, ip_forward, the mount
# point directories.  There is one real node per machine (its ports, cgroups and
# bridge are the machine's): NODE_LOCK says whose it is.
#
# Expects from e2e/cluster: STATE, PKI, BIN, APISERVER_PORT, start/stop/alive/
# wait_for/fail/say/die.

NODE_LOCK_DIR=/run/dra-doctor-node
NODE_LOCK=$NODE_LOCK_DIR/lock
NODE_IP=10.244.0.1
NODE_CIDR=10.244.0.0/24
NODE_BRIDGE=ddcni0
NODE_E2E=$E2E/node
NODE_COMPONENTS="node containerd kubelet"
KUBELET_PORT=10250
KUBELET_HEALTHZ_PORT=10248

node_root() { echo "$STATE/node/root"; }
node_nspid() { cat "$STATE/node/ns.pid" 2>/dev/null || true; }

# node_in CMD...: CMD inside the node's mount namespace (what containerd and the kubelet see).
node_in() {
    nspid=$(node_nspid)
    [ -n "$nspid" ] && [ -e "/proc/$nspid/ns/mnt" ] || die "the node's mount namespace is gone"
    nsenter --mount="/proc/$nspid/ns/mnt" -- "$@"
}

node_ctr() { node_in "$CTRD_BIN/ctr" --address /run/containerd/containerd.sock "$@"; }

# ---------------------------------------------------------------- preflight

node_preflight() {
    [ "$(id -u)" = 0 ] || die "a real node needs root (or use --node sim)"
    missing=""
    for f in /usr/sbin/runc /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/loopback; do
        [ -x "$f" ] || missing="$missing $f"
    done
    for c in iptables unshare nsenter ip flock cc python3; do
        command -v "$c" >/dev/null 2>&1 || missing="$missing $c"
    done
    [ -x /bin/busybox ] || [ -x /usr/bin/busybox ] || missing="$missing busybox"
    [ -z "$missing" ] || die "the real node needs:$missing (make deps installs them: runc, containernetworking-plugins, iptables, busybox-static)"
    node_owner_check
    for p in $KUBELET_PORT $KUBELET_HEALTHZ_PORT; do
        port_busy "$p" && die "port $p is in use: is another kubelet running on this machine? (a real node needs it; use --node sim)"
    done
    ip link show "$NODE_BRIDGE" >/dev/null 2>&1 &&
        die "network bridge $NODE_BRIDGE exists but no dra-doctor node owns it: remove it (ip link del $NODE_BRIDGE) or use --node sim"
    return 0
}

# The node lock: free, held by a running cluster (fail, naming it), or left by one
# that died (clean up what it left, then go on).
node_owner_check() {
    mkdir -p "$NODE_LOCK_DIR"
    if ! flock -n "$NODE_LOCK" true; then
        die "a real node is already running on this machine, for the cluster in $(cat "$NODE_LOCK_DIR/owner" 2>/dev/null || echo '(unknown)'): one node per machine (its kubelet port, cgroups and bridge are the machine's). Stop it first ('e2e/cluster down --dir $(cat "$NODE_LOCK_DIR/owner" 2>/dev/null)'), or start this cluster with --node sim"
    fi
    old=$(cat "$NODE_LOCK_DIR/owner" 2>/dev/null || true)
    if [ -n "$old" ] && [ "$old" != "$STATE" ]; then
        say "cleaning up after the real node of $old, which did not stop cleanly"
        (STATE=$old; node_cleanup) || true
    fi
}

# ---------------------------------------------------------------- config

# node_containerd_config SRC: SRC as the node's /etc/containerd/config.toml, with the two
# edits this machine needs (nothing else changes; the node agent reads the result):
#  - SystemdCgroup = true -> false: there is no systemd; the kubelet uses cgroupfs too;
#  - restrict_oom_score_adj = true without CAP_SYS_RESOURCE (root here lacks it): runc
#    cannot lower a sandbox's oom_score_adj to -998, and every sandbox would fail with
#    "can't get final child's PID from pipe: EOF".
node_containerd_config() {
    src=$1 dst=$(node_root)/etc/containerd/config.toml
    mkdir -p "$(dirname "$dst")"
    sed -e 's/^\([[:space:]]*SystemdCgroup[[:space:]]*=[[:space:]]*\)true/\1false/' "$src" >"$dst.tmp"
    if ! node_has_cap_sys_resource; then
        if grep -q '^[[:space:]]*restrict_oom_score_adj[[:space:]]*=' "$dst.tmp"; then
            sed -i 's/^\([[:space:]]*restrict_oom_score_adj[[:space:]]*=[[:space:]]*\)false/\1true/' "$dst.tmp"
        else
            sed -i '/^[[:space:]]*\[plugins\."io\.containerd\.\(grpc\.v1\.cri\|cri\.v1\.runtime\)"\][[:space:]]*$/a\    restrict_oom_score_adj = true' "$dst.tmp"
        fi
    fi
    chmod 644 "$dst.tmp"
    mv "$dst.tmp" "$dst"
}

node_has_cap_sys_resource() {
    eff=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
    [ $(( (0x$eff >> 24) & 1 )) = 1 ]
}

node_write_configs() {
    r=$(node_root)
    mkdir -p "$r/etc/cni/net.d" "$STATE/node"
    chmod 755 "$r" "$r/etc" "$r/etc/cni" "$r/etc/cni/net.d"
    # Pods get no nameserver: nothing here resolves names, and no query leaves the machine.
    : >"$STATE/node/resolv.conf"
    cat >"$r/etc/cni/net.d/10-dd-pods.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "dd-pods",
  "plugins": [{
    "type": "bridge", "bridge": "$NODE_BRIDGE", "isGateway": true, "ipMasq": false,
    "hairpinMode": true,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": "$NODE_CIDR", "gateway": "$NODE_IP"}]],
             "routes": [{"dst": "0.0.0.0/0"}]}
  }]
}
EOF
    chmod 644 "$r/etc/cni/net.d/10-dd-pods.conflist"
    if [ ! -f "$r/etc/containerd/config.toml" ]; then
        case $NODE_CONTAINERD in
            1*) node_containerd_config "$NODE_E2E/containerd-1.7.toml" ;;
            *) node_containerd_config "$NODE_E2E/containerd-2.toml" ;;
        esac
    fi
    sed -e "s#@STATE@#$STATE#g" -e "s#@PKI@#$PKI#g" -e "s#@NODE_IP@#$NODE_IP#g" \
        "$NODE_E2E/kubelet-config.yaml" >"$STATE/node/kubelet-config.yaml"
}

# The kubelet's identity (system:node:NAME, for the Node authorizer and NodeRestriction)
# and its serving certificate, signed by the cluster CA, for the node's IP: the API server
# verifies it (--kubelet-certificate-authority) when it calls the kubelet for exec and logs.
node_pki() {
    kc=$(cmd_node_kubeconfig "$NODE_NAME")
    [ -f "$PKI/kubelet-serving.crt" ] && [ "$(cat "$PKI/kubelet-serving.name" 2>/dev/null)" = "$NODE_NAME" ] && return 0
    printf 'basicConstraints = critical,CA:FALSE\nkeyUsage = critical,digitalSignature\nextendedKeyUsage = serverAuth\nauthorityKeyIdentifier = keyid\nsubjectAltName = IP:%s,DNS:%s\n' \
        "$NODE_IP" "$NODE_NAME" >"$PKI/kubelet-serving.ext"
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 -config "$PKI/openssl.cnf" \
        -subj "/CN=$NODE_NAME" -keyout "$PKI/kubelet-serving.key" -out "$PKI/kubelet-serving.csr" 2>/dev/null &&
    openssl x509 -req -sha256 -days 3650 -in "$PKI/kubelet-serving.csr" -CA "$PKI/ca.crt" \
        -CAkey "$PKI/ca.key" -CAcreateserial -CAserial "$PKI/ca.srl" \
        -extfile "$PKI/kubelet-serving.ext" -out "$PKI/kubelet-serving.crt" 2>/dev/null ||
        die "cannot issue the kubelet's serving certificate"
    rm -f "$PKI/kubelet-serving.csr"
    echo "$NODE_NAME" >"$PKI/kubelet-serving.name"
    : "$kc"
}

# ---------------------------------------------------------------- host network

# The pods' bridge exists before the kubelet starts: its address is the node's IP.
# Pods reach the API server at the `kubernetes` Service (10.0.0.1:443) through a DNAT to
# its loopback port (no kube-proxy); they reach nothing off this machine, nor the
# kubelet's port.
node_network_up() {
    cat /proc/sys/net/ipv4/ip_forward >"$STATE/node/ip_forward"
    for t in nat filter; do
        iptables -t "$t" -S KUBE-KUBELET-CANARY >/dev/null 2>&1 && echo "$t" >>"$STATE/node/kube-chains-before"
    done
    ip link add "$NODE_BRIDGE" type bridge
    ip addr add "$NODE_IP/24" dev "$NODE_BRIDGE"
    ip link set "$NODE_BRIDGE" up
    sysctl -qw "net.ipv4.conf.$NODE_BRIDGE.route_localnet=1"
    sysctl -qw net.ipv4.ip_forward=1
    iptables -t nat -N DD-NODE
    iptables -t nat -A DD-NODE -d 10.0.0.1/32 -p tcp --dport 443 -j DNAT --to-destination "127.0.0.1:$APISERVER_PORT"
    iptables -t nat -A PREROUTING -j DD-NODE
    iptables -N DD-NODE-IN
    iptables -A DD-NODE-IN -i "$NODE_BRIDGE" -p tcp --dport "$KUBELET_PORT" -j DROP
    iptables -I INPUT -j DD-NODE-IN
    iptables -N DD-NODE-FWD
    iptables -A DD-NODE-FWD -i "$NODE_BRIDGE" ! -o "$NODE_BRIDGE" -j DROP
    iptables -I FORWARD -j DD-NODE-FWD
}

node_network_down() {
    ip link del "$NODE_BRIDGE" 2>/dev/null || true
    iptables -t nat -D PREROUTING -j DD-NODE 2>/dev/null || true
    iptables -t nat -F DD-NODE 2>/dev/null && iptables -t nat -X DD-NODE 2>/dev/null
    iptables -D INPUT -j DD-NODE-IN 2>/dev/null || true
    iptables -F DD-NODE-IN 2>/dev/null && iptables -X DD-NODE-IN 2>/dev/null
    iptables -D FORWARD -j DD-NODE-FWD 2>/dev/null || true
    iptables -F DD-NODE-FWD 2>/dev/null && iptables -X DD-NODE-FWD 2>/dev/null
    # The kubelet's own chains (its iptables canary and KUBE-FIREWALL), unless the host had
    # them before this node started.
    if [ ! -s "$STATE/node/kube-chains-before" ]; then
        for t in nat filter mangle; do
            for c in $(iptables -t "$t" -S 2>/dev/null | sed -n 's/^-N \(KUBE-[A-Z-]*\)$/\1/p'); do
                iptables -t "$t" -S 2>/dev/null | sed -n "s/^-A \([A-Z-]*\) \(.*-j $c\)\$/\1 \2/p" |
                    while read -r chain rule; do
                        # shellcheck disable=SC2086
                        iptables -t "$t" -D "$chain" $rule 2>/dev/null || true
                    done
                iptables -t "$t" -F "$c" 2>/dev/null || true
                iptables -t "$t" -X "$c" 2>/dev/null || true
            done
            if command -v ip6tables >/dev/null 2>&1; then
                for c in $(ip6tables -t "$t" -S 2>/dev/null | sed -n 's/^-N \(KUBE-[A-Z-]*\)$/\1/p'); do
                    ip6tables -t "$t" -S 2>/dev/null | sed -n "s/^-A \([A-Z-]*\) \(.*-j $c\)\$/\1 \2/p" |
                        while read -r chain rule; do
                            # shellcheck disable=SC2086
                            ip6tables -t "$t" -D "$chain" $rule 2>/dev/null || true
                        done
                    ip6tables -t "$t" -F "$c" 2>/dev/null || true
                    ip6tables -t "$t" -X "$c" 2>/dev/null || true
                done
            fi
        done
    fi
    if [ -f "$STATE/node/ip_forward" ]; then
        sysctl -qw "net.ipv4.ip_forward=$(cat "$STATE/node/ip_forward")" || true
    fi
}

# ---------------------------------------------------------------- components

start_node() {
    mkdir -p "$NODE_LOCK_DIR" "$(node_root)"
    rm -f "$STATE/node/ns.pid"
    # flock holds the machine's node lock for as long as the namespace lives.
    start node flock -n -E 75 "$NODE_LOCK" unshare --mount --propagation private -- \
        sh "$NODE_E2E/ns.sh" "$STATE"
    i=0
    until [ -s "$STATE/node/ns.pid" ]; do
        i=$((i + 1))
        if [ $i -gt 100 ] || ! alive node; then fail "the node's mount namespace did not come up"; fi
        sleep 0.05
    done
    echo "$STATE" >"$NODE_LOCK_DIR/owner"
}
wait_node() { :; }

# A node's daemons run with umask 022 (e2e/cluster's own is 077): containerd's snapshots
# and the kubelet's volumes must be readable by a container's non-root user.
start_containerd() {
    start containerd nsenter --mount="/proc/$(node_nspid)/ns/mnt" -- \
        sh -c 'umask 022 && exec "$0" "$@"' env PATH="$CTRD_BIN:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        "$CTRD_BIN/containerd" --config /etc/containerd/config.toml
}
wait_containerd() { wait_for containerd 60 node_ctr version; }

start_kubelet() {
    start kubelet nsenter --mount="/proc/$(node_nspid)/ns/mnt" -- \
        sh -c 'umask 022 && exec "$0" "$@"' "$KUBELET_BIN/kubelet" --config="$STATE/node/kubelet-config.yaml" \
        --kubeconfig="$STATE/node-$NODE_NAME.kubeconfig" --hostname-override="$NODE_NAME" \
        --node-ip="$NODE_IP" --v="${DD_KUBELET_V:-2}"
}
wait_kubelet() {
    wait_for kubelet 60 curl -sf --max-time 2 "http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz"
    wait_for kubelet 60 sh -c "'$BIN/kubectl' --kubeconfig='$STATE/kubeconfig' get node '$NODE_NAME' \
        -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
}

# node_bins: build (or find) the kubelet, containerd and the driver; sets KUBELET_BIN,
# CTRD_BIN and DRIVER_BIN.
node_bins() {
    case $NODE_CONTAINERD in
        1*) ctrd=containerd ;;
        2*) ctrd=containerd2 ;;
        *) die "--containerd wants 1 (1.7.x, the default) or 2 (2.x)" ;;
    esac
    out=$(K8S_VERSION=$K8S_VERSION sh "$NODE_E2E/build.sh" kubelet "$ctrd" driver) ||
        die "e2e/node/build.sh failed"
    KUBELET_BIN=$(echo "$out" | sed -n 's/^kubelet //p')
    CTRD_BIN=$(echo "$out" | sed -n "s/^$ctrd //p")
    DRIVER_BIN=$(echo "$out" | sed -n 's/^driver //p')
    mkdir -p "$STATE/node"
    printf 'KUBELET_BIN=%s\nCTRD_BIN=%s\nDRIVER_BIN=%s\n' "$KUBELET_BIN" "$CTRD_BIN" "$DRIVER_BIN" \
        >"$STATE/node/node.env"
}

# node_images: the node's images, made locally and imported (no registry here).
node_images() {
    d=$STATE/node/images
    sh "$NODE_E2E/images.sh" "$d" "$DRIVER_BIN" ${DD_IMAGE_BIN:+"$DD_IMAGE_BIN"} \
        >"$STATE/logs/images.log" 2>&1 || { cat "$STATE/logs/images.log" >&2; fail "making the node's images failed"; }
    for t in "$d"/*.tar; do
        node_ctr -n k8s.io images import "$t" >>"$STATE/logs/images.log" 2>&1 ||
            fail "ctr images import $t failed (see $STATE/logs/images.log)"
    done
}

# node_up: the node, after the control plane.  Prints how long each part took.
node_up() {
    t0=$(now)
    node_preflight
    node_bins
    node_pki
    t1=$(now)
    node_write_configs
    node_network_up
    echo "real" >"$STATE/node/mode"
    echo "$NODE_NAME" >"$STATE/node/name"
    echo "$NODE_CONTAINERD" >"$STATE/node/containerd"
    start_node
    start_containerd
    wait_containerd
    node_images
    t2=$(now)
    start_kubelet
    wait_kubelet
    t3=$(now)
    say "node $NODE_NAME Ready: kubelet $K8S_VERSION, containerd $("$CTRD_BIN/containerd" --version | cut -d' ' -f3) (binaries $((t1 - t0))s, containerd and images $((t2 - t1))s, kubelet to Ready $((t3 - t2))s)"
}

# node_kill_pods: every process in the node's pod cgroups, then the cgroups.  The kubelet
# and containerd are stopped first, so nothing starts them again.
node_kill_pods() {
    for round in 1 2 3 4 5 6 7 8 9 10; do
        left=0
        for cg in /sys/fs/cgroup/kubepods /sys/fs/cgroup/*/kubepods; do
            [ -d "$cg" ] || continue
            for p in $(find "$cg" -name cgroup.procs -exec cat {} + 2>/dev/null); do
                kill -KILL "$p" 2>/dev/null && left=1
            done
        done
        [ $left = 0 ] && break
        sleep 0.2
        : "$round"
    done
    for cg in /sys/fs/cgroup/kubepods /sys/fs/cgroup/*/kubepods; do
        [ -d "$cg" ] || continue
        find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
    done
}

# node_ns_procs: the processes in the node's mount namespace (containerd's shims after
# containerd itself is gone), but for the namespace's holder.
node_ns_procs() {
    nspid=$(node_nspid)
    [ -n "$nspid" ] && [ -e "/proc/$nspid/ns/mnt" ] || return 0
    ns=$(readlink "/proc/$nspid/ns/mnt")
    for d in /proc/[0-9]*; do
        p=${d#/proc/}
        [ "$p" = "$nspid" ] && continue
        [ "$(readlink "$d/ns/mnt" 2>/dev/null)" = "$ns" ] && echo "$p"
    done
}

# node_cleanup: everything a real node leaves on the machine, whether it stopped or
# crashed: its processes, its pods, the host's network changes, cgroups, mount points,
# the node's state under STATE/node/root and the machine's node lock.
node_cleanup() {
    if [ ! -f "$STATE/node/mode" ]; then
        # A cluster that failed before its node came up made the lock's directory (and
        # file) while checking it: remove them when no one holds or owns the lock.
        if [ -d "$NODE_LOCK_DIR" ] && [ ! -s "$NODE_LOCK_DIR/owner" ] && flock -n "$NODE_LOCK" true 2>/dev/null; then
            rm -f "$NODE_LOCK"; rmdir "$NODE_LOCK_DIR" 2>/dev/null || true
        fi
        return 0
    fi
    (stop kubelet) || true
    node_kill_pods
    (stop containerd) || true
    for p in $(node_ns_procs); do kill -KILL "$p" 2>/dev/null || true; done
    (stop node) || true
    node_kill_pods
    node_network_down
    if [ -f "$STATE/node/mountpoints" ]; then
        sort -r "$STATE/node/mountpoints" | while read -r m; do rmdir "$m" 2>/dev/null || true; done
        rm -f "$STATE/node/mountpoints"
    fi
    rm -rf --one-file-system "$(node_root)" "$STATE/node/images" "$STATE/node/ns.pid"
    rm -f "$STATE/node/mode" "$STATE/node/ip_forward" "$STATE/node/kube-chains-before"
    if [ "$(cat "$NODE_LOCK_DIR/owner" 2>/dev/null)" = "$STATE" ]; then
        rm -f "$NODE_LOCK_DIR/owner" "$NODE_LOCK"
        rmdir "$NODE_LOCK_DIR" 2>/dev/null || true
    fi
}
