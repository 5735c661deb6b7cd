#!/usr/bin/env bash
# cluster.sh: a two-node Kubernetes on this host, in network namespaces of
# its own, running deploy/kubernetes (make test-cluster runs 'test').
#
#   cluster.sh up        start it (after removing what a killed run left)
#   cluster.sh down      end it and remove everything it made
#   cluster.sh test      up, the fleet tests (cluster_test.go), down
#   cluster.sh kubectl … the built kubectl, inside the cluster's network
#   cluster.sh exec NODE CMD…  CMD in the namespaces of node n1 or n2
#
# Node n1 (10.77.0.1) runs the control plane and boxer's runc pool, n2
# (10.77.0.2, labelled boxer.dev/runsc=true) the runsc pool; a veth pair
# joins them, with no default route: nothing leaves the machine. Each node
# is 'ip netns exec boxer-cluster-NODE unshare --mount --pid --fork --cgroup
# --uts' running node.sh. No host setting changes: sysctls the kubelet
# would set host-wide are kept from it (node.sh), everything else lives in
# the namespaces, in $W and in one cgroup subtree per hierarchy.
# The binaries come from 'make kube' (paths in the environment, set there).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)

: "${KUBE_BIN:?run through make (make test-cluster)}" "${COREDNS_BIN:?}" "${ETCD_DIR:?}" "${CNI_DIR:?}" "${NFT_DIR:?}"
: "${KUBEROUTER_BIN:?}" "${IPT_DIR:?}"
LIBEXEC=${LIBEXEC:-/usr/local/lib/boxer/bin}
W=${BOXER_CLUSTER_DIR:-/var/tmp/boxer-cluster}
NODES="n1 n2"
N1_IP=10.77.0.1
N2_IP=10.77.0.2
SERVICE_CIDR=10.96.0.0/16
POD_CIDR=10.244.0.0/16
KUBELET_SYSCTLS="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes"
BOXER_IMAGE=boxer.test/boxer:cluster
PAUSE_IMAGE=boxer.test/pause:cluster
COREDNS_IMAGE=boxer.test/coredns:cluster

node_ip() { case $1 in n1) echo $N1_IP ;; n2) echo $N2_IP ;; esac; }
node_cidr() { case $1 in n1) echo 10.244.1.0/24 ;; n2) echo 10.244.2.0/24 ;; esac; }
node_labels() { case $1 in n1) echo boxer.dev/pool=runc ;; n2) echo boxer.dev/runsc=true,boxer.dev/pool=runsc ;; esac; }
other() { case $1 in n1) echo n2 ;; n2) echo n1 ;; esac; }
ns() { echo "boxer-cluster-$1"; }
say() { echo "==> cluster: $*" >&2; }

# The host PID of a node's unshare, or nothing: only if it is still that
# process (a PID of a run long gone may be another's now).
unshare_pid() {
	local u
	u=$(cat "$W/$1/unshare.pid" 2>/dev/null) || return 0
	if tr '\0' ' ' <"/proc/$u/cmdline" 2>/dev/null | grep -q "node.sh $1 $W"; then echo "$u"; fi
	return 0
}

# The host PID of a node's first process (node.sh), or nothing.
node_pid() {
	local u
	u=$(unshare_pid "$1")
	if [ -n "$u" ]; then tr ' ' '\n' <"/proc/$u/task/$u/children" 2>/dev/null | head -n1; fi
	return 0
}

kubectl_() { ip netns exec "$(ns n1)" "$KUBE_BIN/kubectl" --kubeconfig="$W/pki/admin.kubeconfig" "$@"; }

exec_() {
	local n=$1 pid d base
	shift
	pid=$(node_pid "$n")
	[ -n "$pid" ] || { echo "cluster: node $n is not running" >&2; return 1; }
	# In the node's cgroup too, not only its cgroup namespace.
	(
		while read -r d base; do echo $BASHPID >"$d$base/boxer-cluster/$n/cgroup.procs"; done < <(cgroup_dirs)
		exec nsenter -t "$pid" -m -u -n -p -C --wd=/ -- env PATH="$LIBEXEC:$W/$n/bin:$PATH" "$@"
	)
}

# The cgroup of this shell in each hierarchy, as 'mountpoint path' lines.
cgroup_dirs() {
	local id ctrls path d
	while IFS=: read -r id ctrls path; do
		case $ctrls in
		"") d=/sys/fs/cgroup/unified ;;
		name=*) d=/sys/fs/cgroup/${ctrls#name=} ;;
		*) d=/sys/fs/cgroup/$ctrls ;;
		esac
		[ -d "$d" ] && echo "$d ${path%/}"
	done </proc/self/cgroup
}

down() {
	local n u pid i t0=$SECONDS
	for n in $NODES; do
		u=$(unshare_pid "$n")
		[ -n "$u" ] || continue
		pid=$(node_pid "$n")
		# unshare --fork ignores SIGTERM: the node's PID 1 is killed, which
		# ends every process of its PID namespace, then unshare exits.
		[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
		for i in $(seq 100); do [ -d /proc/$u ] || break; sleep 0.1; done
		[ -d /proc/$u ] && kill -9 "$u" 2>/dev/null || true
	done
	[ -d "$W" ] && say "down: processes ended in $((SECONDS - t0))s"
	for n in $NODES; do
		ip netns del "$(ns $n)" 2>/dev/null || true
	done
	# The nodes' cgroups, deepest first, once their processes are gone.
	local d base
	while read -r d base; do
		[ -d "$d$base/boxer-cluster" ] || continue
		for i in $(seq 50); do
			find "$d$base/boxer-cluster" -depth -type d -exec rmdir {} + 2>/dev/null || true
			[ -d "$d$base/boxer-cluster" ] || break
			sleep 0.2
		done
		[ -d "$d$base/boxer-cluster" ] && echo "cluster: $d$base/boxer-cluster is still there" >&2
	done < <(cgroup_dirs)
	if [ -d "$W" ]; then
		if grep -q " $W/" /proc/self/mountinfo; then
			echo "cluster: mounts are left under $W, not removing it:" >&2
			grep " $W/" /proc/self/mountinfo >&2
			return 1
		fi
		say "down: cgroups removed in $((SECONDS - t0))s"
		if mountpoint -q "$W"; then umount "$W" || return 1; fi
		rm -rf --one-file-system "$W"
	fi
	if [ -e "$W.img" ]; then
		local l
		for l in $(losetup -j "$W.img" -O NAME -n); do losetup -d "$l" || true; done
		rm -f "$W.img"
		say "down: files removed in $((SECONDS - t0))s"
	fi
}

pki() {
	local p=$W/pki
	mkdir -p "$p"
	cd "$p"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt \
		-days 2 -subj /CN=boxer-cluster-ca 2>/dev/null
	# cert NAME SUBJECT [SANS]
	cert() {
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$1.key" -subj "$2" 2>/dev/null |
			openssl x509 -req -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out "$1.crt" 2>/dev/null \
				-extfile <(printf 'extendedKeyUsage=serverAuth,clientAuth\n%s' "${3:+subjectAltName=$3}")
	}
	cert apiserver /CN=kube-apiserver \
		"IP:$N1_IP,IP:10.96.0.1,IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	cert apiserver-kubelet "/O=system:masters/CN=kube-apiserver-kubelet-client"
	cert admin "/O=system:masters/CN=admin"
	cert kcm /CN=system:kube-controller-manager
	cert scheduler /CN=system:kube-scheduler
	cert proxy /CN=system:kube-proxy
	cert router /CN=boxer-cluster:kube-router
	for n in $NODES; do cert "node-$n" "/O=system:nodes/CN=system:node:$n"; done
	openssl genrsa -out sa.key 2048 2>/dev/null
	openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
	for c in admin kcm scheduler proxy router node-n1 node-n2; do
		cat >"$c.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: boxer
  cluster: {server: "https://$N1_IP:6443", certificate-authority: "$p/ca.crt"}
users:
- name: u
  user: {client-certificate: "$p/$c.crt", client-key: "$p/$c.key"}
contexts:
- name: c
  context: {cluster: boxer, user: u}
current-context: c
EOF
	done
	cd - >/dev/null
}

node_files() {
	local n=$1 nd=$W/$1
	mkdir -p "$nd/bin" "$nd/cni" "$nd/log"
	# kube-proxy's nftables mode runs nft: Debian's, with its libraries.
	cat >"$nd/bin/nft" <<EOF
#!/bin/sh
LD_LIBRARY_PATH=$NFT_DIR/usr/lib/x86_64-linux-gnu exec $NFT_DIR/usr/sbin/nft "\$@"
EOF
	chmod +x "$nd/bin/nft"
	# kube-router's firewall runs iptables (nf_tables, in the node's own
	# network namespace) and ipset: Debian's, with their libraries.
	local t
	for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
		cat >"$nd/bin/$t" <<EOF
#!/bin/sh
LD_LIBRARY_PATH=$IPT_DIR/usr/lib/x86_64-linux-gnu XTABLES_LIBDIR=$IPT_DIR/usr/lib/x86_64-linux-gnu/xtables exec $IPT_DIR/usr/sbin/xtables-nft-multi $t "\$@"
EOF
	done
	cat >"$nd/bin/ipset" <<EOF
#!/bin/sh
LD_LIBRARY_PATH=$IPT_DIR/usr/lib/x86_64-linux-gnu exec $IPT_DIR/usr/sbin/ipset "\$@"
EOF
	chmod +x "$nd"/bin/ip*
	cat >"$nd/containerd.toml" <<EOF
version = 3
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins."io.containerd.cri.v1.images".pinned_images]
  sandbox = "$PAUSE_IMAGE"
[plugins."io.containerd.cri.v1.runtime"]
  # Root here lacks CAP_SYS_RESOURCE: runc cannot lower oom_score_adj.
  restrict_oom_score_adj = true
[plugins."io.containerd.cri.v1.runtime".cni]
  bin_dirs = ["$CNI_DIR/usr/lib/cni"]
  conf_dir = "$nd/cni"
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
  BinaryName = "$LIBEXEC/runc"
EOF
	cat >"$nd/cni/10-boxer-cluster.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "boxer-cluster", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$(node_cidr "$n")"}]], "routes": [{"dst": "0.0.0.0/0"}]}}
]}
EOF
	cat >"$nd/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 here (hybrid hierarchy): the kubelet refuses it unless told.
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$W/pki/ca.crt"}
authorization: {mode: Webhook}
clusterDomain: cluster.local
clusterDNS: [10.96.0.10]
resolvConf: ""
failSwapOn: false
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
# The images are imported, not pulled: never collect them; and a shared
# host's disk and memory are not this node's to evict for.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
EOF
	cat >"$nd/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "$W/pki/proxy.kubeconfig"}
hostnameOverride: $n
mode: nftables
clusterCIDR: $POD_CIDR
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# The conntrack table's size and timeouts are the host's: left as they are.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
# Not masqueradeAll: a pod's Service traffic keeps its address, which is
# what a NetworkPolicy selects on (the node's own traffic to a Service is
# still masqueraded: it comes from outside clusterCIDR). The answer of an
# endpoint on the caller's own bridge is un-NATed there too: the bridge's
# traffic passes netfilter (br_netfilter, bridge-nf-call-iptables, on by
# default in a new network namespace).
nftables: {masqueradeAll: false}
EOF
}

network() {
	local n
	for n in $NODES; do
		ip netns add "$(ns $n)"
		ip -n "$(ns $n)" link set lo up
	done
	ip -n "$(ns n1)" link add eth0 type veth peer name eth0 netns "$(ns n2)"
	for n in $NODES; do
		ip -n "$(ns $n)" addr add "$(node_ip $n)/24" dev eth0
		ip -n "$(ns $n)" link set eth0 up
		# The other node's pods, and the Services' addresses (which
		# kube-proxy rewrites after this first route lookup). No default
		# route: nothing leaves the machine.
		ip -n "$(ns $n)" route add "$(node_cidr "$(other $n)")" via "$(node_ip "$(other $n)")"
		ip -n "$(ns $n)" route add "$SERVICE_CIDR" dev eth0
		# The namespace's own forwarding, not the host's.
		ip netns exec "$(ns $n)" sysctl -qw net.ipv4.ip_forward=1
	done
}

start_node() {
	local n=$1 d base
	# A subshell joins this node's cgroup in every hierarchy, then becomes
	# ip netns exec, which becomes unshare: its cgroup namespace's root.
	(
		while read -r d base; do
			mkdir -p "$d$base/boxer-cluster/$n"
			if [ -e "$d$base/boxer-cluster/cpuset.cpus" ]; then
				cat "$d$base/cpuset.cpus" >"$d$base/boxer-cluster/cpuset.cpus"
				cat "$d$base/cpuset.mems" >"$d$base/boxer-cluster/cpuset.mems"
				cat "$d$base/cpuset.cpus" >"$d$base/boxer-cluster/$n/cpuset.cpus"
				cat "$d$base/cpuset.mems" >"$d$base/boxer-cluster/$n/cpuset.mems"
			fi
			echo $BASHPID >"$d$base/boxer-cluster/$n/cgroup.procs"
		done < <(cgroup_dirs)
		exec ip netns exec "$(ns $n)" unshare --mount --pid --fork --cgroup --uts --mount-proc --propagation private \
			bash "$here/node.sh" "$n" "$W" </dev/null >>"$W/$n/log/unshare.log" 2>&1
	) &
	echo $! >"$W/$n/unshare.pid"
}

images() {
	local img=$W/images
	mkdir -p "$img"
	say "building boxer from this checkout"
	(cd "$repo" && CGO_ENABLED=0 go build -trimpath -tags "urfave_cli_no_docs grpcnotrace" -o "$img/boxer" ./cmd/boxer &&
		go build -o "$img/kubeimage" ./deploy/kubernetes/cluster/kubeimage)
	musl-gcc -static -Os -s -Wall -Wextra -Werror -o "$img/boxer-init" "$repo/init/boxer-init.c"
	musl-gcc -static -Os -s -Wall -Wextra -Werror -o "$img/boxer-wrap" "$repo/init/boxer-wrap.c"
	musl-gcc -static -Os -s -Wall -Wextra -Werror -o "$img/boxer-procd" "$repo/init/boxer-procd.c" "$repo/init/boxer-procd-start.c"
	# The Debian packages the Containerfile names, as 'boxer image build'
	# makes them: on n1's containerd (its mount namespace) but from the
	# host's network, where the Debian mirror is; the layer lands in
	# boxer's layer cache, once per machine.
	local pkgs
	pkgs=$(sed -n 's/.*apt-get install -y --no-install-recommends \([a-z0-9 .+-]*\).*/\1/p' "$repo/deploy/kubernetes/Containerfile" | tr -s ' ' ',')
	pkgs=${pkgs%,}
	[ -n "$pkgs" ] || { echo "cluster: no apt-get install line in the Containerfile" >&2; return 1; }
	nsenter -t "$(node_pid n1)" -m -p --wd=/ -- env BOXER_CACHE=/var/lib/boxer/cache "$img/boxer" --address /run/containerd/containerd.sock \
		--namespace boxer-cluster-build image build boxer-pod-base --packages "$pkgs" >&2
	"$img/kubeimage" -o "$img/boxer.tar" -name "$BOXER_IMAGE" -debian "$pkgs" \
		-file "$img/boxer=/usr/local/bin/boxer" -file "$img/boxer-init=/usr/local/bin/boxer-init" \
		-file "$img/boxer-wrap=/usr/local/bin/boxer-wrap" -file "$img/boxer-procd=/usr/local/bin/boxer-procd" -entrypoint /usr/local/bin/boxer
	"$img/kubeimage" -o "$img/pause.tar" -name "$PAUSE_IMAGE" -file "$KUBE_BIN/pause=/pause" -entrypoint /pause
	"$img/kubeimage" -o "$img/coredns.tar" -name "$COREDNS_IMAGE" -file "$COREDNS_BIN/coredns=/coredns" -entrypoint /coredns
	local n t
	for n in $NODES; do
		for t in pause coredns boxer; do
			exec_ "$n" ctr -n k8s.io images import "$img/$t.tar" >/dev/null
		done
	done
}

wait_for() { # wait_for SECONDS WHAT CMD...
	local s=$1 what=$2 i
	shift 2
	for i in $(seq $((s * 2))); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	echo "cluster: $what: not within ${s}s" >&2
	return 1
}

up() {
	local t0=$SECONDS n a
	down
	mkdir -p "$W"
	# The cluster's files (etcd, the nodes' containerd with boxer's
	# images, about 4 GB a node, and logs) live on a file system of their
	# own, in the sparse file $W.img: down unmounts it and removes one
	# file. Removed file by file from this host's disk (ext4 mounted with
	# discard) they took 11 minutes; on a tmpfs they held 8 GB of memory.
	truncate -s 24G "$W.img"
	mkfs.ext4 -q -F -O ^has_journal -E nodiscard,lazy_itable_init=1 "$W.img"
	mount -o loop,noinit_itable "$W.img" "$W"
	chmod 0700 "$W"
	cat >"$W/cluster.env" <<EOF
W=$W
LIBEXEC=$LIBEXEC
KUBE_BIN=$KUBE_BIN
KUBEROUTER_BIN=$KUBEROUTER_BIN
ETCD_DIR=$ETCD_DIR
N1_IP=$N1_IP
N2_IP=$N2_IP
SERVICE_CIDR=$SERVICE_CIDR
KUBELET_SYSCTLS="$KUBELET_SYSCTLS"
$(declare -f node_ip node_labels)
EOF
	pki
	for n in $NODES; do node_files "$n"; done
	network
	for n in $NODES; do start_node "$n"; done
	wait_for 180 "the API server" kubectl_ get --raw=/readyz
	say "control plane up in $((SECONDS - t0))s"
	# What kube-router may read (node.sh starts it on each node).
	wait_for 60 "kube-router's role" kubectl_ apply -f "$here/kube-router.yaml"
	images
	say "images imported in $((SECONDS - t0))s"
	for n in $NODES; do wait_for 300 "node $n Ready" kubectl_ wait --for=condition=Ready "node/$n" --timeout=1s; done
	for n in $NODES; do
		a=$(kubectl_ get node "$n" -o 'jsonpath={.status.addresses[?(@.type=="InternalIP")].address}')
		[ "$a" = "$(node_ip "$n")" ] || { echo "cluster: node $n's InternalIP is '$a', not $(node_ip "$n")" >&2; return 1; }
	done
	say "nodes Ready in $((SECONDS - t0))s"
	kubectl_ apply -f "$here/coredns.yaml" >/dev/null
	kubectl_ create namespace boxer --dry-run=client -o yaml | kubectl_ apply -f - >/dev/null
	kubectl_ -n boxer create secret generic boxer-token \
		--from-literal=token="$(openssl rand -hex 32)" --from-literal=fleet-key="$(openssl rand -hex 32)" \
		--from-literal=e2b-keys="e2b_$(openssl rand -hex 20)" >/dev/null
	mkdir -p "$W/kustomize/base"
	cp "$here"/../*.yaml "$W/kustomize/base/" && cp -r "$here/overlay" "$here/../e2b" "$W/kustomize/"
	kubectl_ apply -k "$W/kustomize/overlay" >/dev/null
	wait_for 300 "CoreDNS Ready" kubectl_ -n kube-system rollout status deploy/coredns --timeout=1s
	wait_for 600 "boxer's pods Ready" kubectl_ -n boxer rollout status ds/boxer --timeout=1s
	wait_for 600 "boxer's runsc pods Ready" kubectl_ -n boxer rollout status ds/boxer-runsc --timeout=1s
	say "boxer's pods Ready in $((SECONDS - t0))s"
}

# What the host must have the same before and after: the sysctls the
# kubelet and kube-proxy would set, and no namespace, link, mount, cgroup
# or process of the cluster's (its nftables tables live and die in its
# network namespaces).
host_state() {
	local s d base
	for s in $KUBELET_SYSCTLS net.ipv4.ip_forward net.ipv4.conf.all.forwarding net.bridge.bridge-nf-call-iptables; do
		echo "$s=$(sysctl -n "$s" 2>/dev/null)"
	done
	ip netns list | grep boxer-cluster || true
	ip -o link show cni0 2>/dev/null || true
	grep -E "boxer-cluster|$W" /proc/self/mountinfo || true
	losetup -j "$W.img" 2>/dev/null || true
	if [ -e "$W.img" ]; then echo "$W.img"; fi
	while read -r d base; do [ -d "$d$base/boxer-cluster" ] && echo "cgroup $d$base/boxer-cluster"; done < <(cgroup_dirs)
	pgrep -a -f "$W/|boxer-cluster" | grep -v -e pgrep -e cluster.sh || true
}

logs() {
	local f
	for f in "$W"/n*/log/*.log; do
		[ -s "$f" ] || continue
		echo "---- ${f#$W/} (last lines)" >&2
		tail -n 15 "$f" >&2
	done
	kubectl_ get pods -A -o wide >&2 2>/dev/null || true
}

cmd=${1:-}
shift || true
case $cmd in
up) up ;;
down) down ;;
kubectl) kubectl_ "$@" ;;
exec) exec_ "$@" ;;
test)
	t0=$SECONDS
	before=$(host_state)
	trap 'rc=$?; [ $rc = 0 ] || logs; down || rc=1; after=$(host_state)
		if [ "$before" != "$after" ]; then echo "cluster: the host is not as it was:" >&2; diff <(echo "$before") <(echo "$after") >&2; rc=1; fi
		exit $rc' EXIT
	up
	t1=$SECONDS
	say "running the fleet tests"
	(cd "$repo" && go test -c -tags kubecluster -o "$W/cluster.test" ./deploy/kubernetes/cluster/)
	BOXER_CLUSTER="$here/cluster.sh" ip netns exec "$(ns n1)" "$W/cluster.test" -test.v -test.count=1 -test.timeout=15m "$@"
	say "up in $((t1 - t0))s, tests in $((SECONDS - t1))s"
	;;
*)
	echo "usage: cluster.sh up|down|test|kubectl ARGS|exec NODE CMD" >&2
	exit 2
	;;
esac
