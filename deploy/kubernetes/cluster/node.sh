#!/usr/bin/env bash
# node.sh NODE DIR: the first process of one test-cluster node (cluster.sh starts
# it as 'ip netns exec NS unshare --mount --pid --fork --cgroup --uts
# --mount-proc'): it gives the node its own /run, /var/lib, /var/log, /tmp
# and cgroup tree, keeps the kubelet's kernel settings off the host, then
# runs containerd, the control plane (on n1), the kubelet, kube-proxy and
# kube-router (NetworkPolicy), and waits. The node ends when cluster.sh
# kills this process (PID 1 of the node's PID namespace: the kernel ends
# every other one with it).
set -euo pipefail
node=$1
. "$2/cluster.env"
nd=$W/$node
log=$nd/log
mkdir -p "$log"
exec >>"$log/node.log" 2>&1
echo "node $node: PID $$ in its namespaces"
# The node's address, given to the kubelet: found by itself it would look
# for a default route, which no node has (n2 once ran with no INTERNAL-IP).
ip=$(node_ip "$node")
[ -n "$ip" ] || { echo "node $node: no address in $2/cluster.env"; exit 1; }

hostname "boxer-$node"
# Nothing mounted here reaches the host (unshare made every mount private).
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /tmp
mkdir -p "$nd/varlib/boxer/cache" "$nd/varlog"
# boxer's layer cache is the host's, so that 'boxer setup' in the pods finds
# the Debian layers built before (no debootstrap, no mirror).
mount --bind /var/lib/boxer/cache "$nd/varlib/boxer/cache"
mount --rbind "$nd/varlib" /var/lib
mount --bind "$nd/varlog" /var/log
mkdir -p /var/lib/containerd /var/lib/kubelet /var/lib/cni /run/containerd

# The node's cgroup tree: cluster.sh put this process in a subtree of every
# hierarchy before unshare made the cgroup namespace, and a cgroup
# filesystem mounted here has that subtree as its root.
mount -t tmpfs -o mode=0755 cgroup /sys/fs/cgroup
while IFS=: read -r _ ctrls _; do
	case $ctrls in
	"") mkdir -p /sys/fs/cgroup/unified && mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified ;;
	name=*) d=${ctrls#name=}; mkdir -p "/sys/fs/cgroup/$d" && mount -t cgroup -o "none,$ctrls" cgroup "/sys/fs/cgroup/$d" ;;
	*) mkdir -p "/sys/fs/cgroup/$ctrls" && mount -t cgroup -o "$ctrls" cgroup "/sys/fs/cgroup/$ctrls"
	   if [[ $ctrls == *,* ]]; then IFS=, read -ra parts <<<"$ctrls"; for p in "${parts[@]}"; do ln -sfn "$ctrls" "/sys/fs/cgroup/$p"; done; fi ;;
	esac
done </proc/self/cgroup

# Shared, as systemd makes a host's mounts: boxer's Bidirectional /run/boxer
# needs it. The peers are this node's own mounts (and its pods'): the
# mounts were copied private from the host's.
mount --make-rshared /

# The kubelet sets these host-wide sysctls (they are not per network
# namespace) at its start; files bound over them take its writes until it
# is up, then go: left in place, they make every sandbox's mount of /proc
# fail (the kernel refuses a proc mount where proc has files bound over).
for s in $KUBELET_SYSCTLS; do
	f=/proc/sys/${s//.//}
	cat "$f" >"$nd/sysctl-$s"
	mount --bind "$nd/sysctl-$s" "$f"
done

export PATH=$LIBEXEC:$nd/bin:$PATH
containerd --config "$W/$node/containerd.toml" >"$log/containerd.log" 2>&1 &
for _ in $(seq 100); do [ -S /run/containerd/containerd.sock ] && break; sleep 0.1; done

if [ "$node" = n1 ]; then
	"$ETCD_DIR/usr/bin/etcd" --name n1 --data-dir /var/lib/etcd \
		--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
		--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster n1=http://127.0.0.1:2380 >"$log/etcd.log" 2>&1 &
	p=$W/pki
	"$KUBE_BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
		--advertise-address="$N1_IP" --secure-port=6443 \
		--service-cluster-ip-range="$SERVICE_CIDR" \
		--client-ca-file="$p/ca.crt" --tls-cert-file="$p/apiserver.crt" --tls-private-key-file="$p/apiserver.key" \
		--kubelet-client-certificate="$p/apiserver-kubelet.crt" --kubelet-client-key="$p/apiserver-kubelet.key" \
		--kubelet-preferred-address-types=InternalIP \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-account-key-file="$p/sa.pub" --service-account-signing-key-file="$p/sa.key" \
		--authorization-mode=Node,RBAC --allow-privileged=true >"$log/kube-apiserver.log" 2>&1 &
fi

# The rest waits for the API server.
for _ in $(seq 600); do
	"$KUBE_BIN/kubectl" --kubeconfig="$W/pki/admin.kubeconfig" get --raw=/readyz >/dev/null 2>&1 && break
	sleep 0.2
done
# The controller manager and scheduler only once the API server has made
# its RBAC roles: started with it, the controller manager exits at once,
# forbidden to read extension-apiserver-authentication.
if [ "$node" = n1 ]; then
	p=$W/pki
	"$KUBE_BIN/kube-controller-manager" --kubeconfig="$p/kcm.kubeconfig" \
		--authentication-kubeconfig="$p/kcm.kubeconfig" --authorization-kubeconfig="$p/kcm.kubeconfig" \
		--service-account-private-key-file="$p/sa.key" --root-ca-file="$p/ca.crt" \
		--use-service-account-credentials=true --leader-elect=false --bind-address=127.0.0.1 \
		>"$log/kube-controller-manager.log" 2>&1 &
	"$KUBE_BIN/kube-scheduler" --kubeconfig="$p/scheduler.kubeconfig" \
		--authentication-kubeconfig="$p/scheduler.kubeconfig" --authorization-kubeconfig="$p/scheduler.kubeconfig" \
		--leader-elect=false --bind-address=127.0.0.1 >"$log/kube-scheduler.log" 2>&1 &
fi
"$KUBE_BIN/kubelet" --config="$nd/kubelet.yaml" --kubeconfig="$W/pki/node-$node.kubeconfig" \
	--hostname-override="$node" --node-ip="$ip" --node-labels="$(node_labels "$node")" \
	>"$log/kubelet.log" 2>&1 &
"$KUBE_BIN/kube-proxy" --config="$nd/kube-proxy.yaml" >"$log/kube-proxy.log" 2>&1 &
# NetworkPolicy, which the bridge CNI ignores: kube-router as a firewall
# only (no routing, no service proxy), with its own read-only identity
# (kube-router.yaml). It exits while its Node is not registered yet:
# started again until it runs.
(
	while :; do
		"$KUBEROUTER_BIN/kube-router" --kubeconfig="$W/pki/router.kubeconfig" --hostname-override="$node" \
			--run-firewall=true --run-router=false --run-service-proxy=false --enable-cni=false \
			--service-cluster-ip-range="$SERVICE_CIDR" --health-port=0 --metrics-port=0 >>"$log/kube-router.log" 2>&1 || true
		echo "node $node: kube-router exited, started again in 2s" >>"$log/kube-router.log"
		sleep 2
	done
) &

# The kubelet has set its sysctls once it has made its QoS cgroups, which
# it does after them: then the files bound over them go.
for _ in $(seq 600); do [ -d /sys/fs/cgroup/pids/kubepods/burstable ] && break; sleep 0.1; done
sleep 1
for s in $KUBELET_SYSCTLS; do umount "/proc/sys/${s//.//}"; done
echo "node $node: kubelet up, sysctl guards removed"
touch "$nd/up"
wait
