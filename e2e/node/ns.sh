#!/bin/sh
# The real node's mount namespace (run by e2e/cluster under `unshare --mount
# --propagation private`).  Binds the node's own directories, all under
# STATE/node/root, over the paths a node's programs and the manifests' hostPath
# volumes use, then sleeps, holding the namespace for containerd and the kubelet
# (they join it with nsenter).  Nothing here is visible outside the namespace:
# when its last process ends, every mount of it (these binds, the kubelet's volume
# mounts, containers' root filesystems, pod network namespaces) goes with it.
#
#   ns.sh STATE
set -eu
STATE=$1
root=$STATE/node/root
umask 022

# The mount points the host lacked are created here (the directory, not its contents,
# is visible on the host) and listed for `down` to remove.
mountpoint_dir() {
    d=$1 missing=""
    while [ ! -d "$d" ]; do missing="$d $missing"; d=$(dirname "$d"); done
    for m in $missing; do
        mkdir "$m"
        echo "$m" >>"$STATE/node/mountpoints"
    done
}

for p in /var/lib/kubelet /var/lib/containerd /run/containerd /var/lib/cni /var/log/pods \
         /var/log/containers /etc/containerd /etc/cdi /run/cdi /etc/cni/net.d /opt/containerd \
         /run/netns /run/nri; do
    mkdir -p "$root$p"
    chmod 755 "$root$p"
    mountpoint_dir "$p"
    mount --bind "$root$p" "$p"
done
# The CNI plugins are Debian's, where containerd's default bin_dir expects them.
mountpoint_dir /opt/cni/bin
mount --bind /usr/lib/cni /opt/cni/bin
mount -o remount,bind,ro /opt/cni/bin

echo $$ >"$STATE/node/ns.pid"
exec sleep infinity
