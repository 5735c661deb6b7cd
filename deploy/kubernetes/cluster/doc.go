// Package cluster holds the real-cluster fleet test: cluster.sh starts a
// two-node Kubernetes on this host in network namespaces of its own,
// applies deploy/kubernetes and runs cluster_test.go (build tag
// kubecluster) through the Services; make test-cluster runs it all.
package cluster
