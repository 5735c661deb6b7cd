//go:build kubecluster

package cluster

import (
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestClusterNetworkPolicy: deploy/kubernetes's NetworkPolicy, enforced by
// the test cluster's kube-router. A pod without the client label reaches
// neither pool's port, nor any boxer pod's fleet port; the same pod,
// labelled, reaches both pools (same node and other node), still not the
// fleet port; boxer's pods reach each other's fleet port. (The fleet tests
// after this one forward sessions between the nodes, and find their peers
// through the cluster's DNS, with the policy in force.)
func TestClusterNetworkPolicy(t *testing.T) {
	f := getFleet(t)
	host := func(base string) string {
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		return u.Hostname()
	}
	runc, runsc := host(f.runc), host(f.runsc)
	peer := kubectl(t, "-n", "boxer", "get", "pods", "-l", "app.kubernetes.io/name=boxer", "--field-selector", "spec.nodeName=n2", "-o", "jsonpath={.items[0].status.podIP}")
	if peer == "" {
		t.Fatal("no boxer pod on n2")
	}

	// A client pod on n1, beside the runc pool's pod; the runsc pool's is
	// on n2. boxer's image has bash, whose /dev/tcp is the probe.
	const pod = "netpol-client"
	kubectl(t, "run", pod, "--image=boxer.test/boxer:cluster", "--image-pull-policy=Never", "--restart=Never",
		`--overrides={"spec":{"nodeName":"n1","automountServiceAccountToken":false}}`, "--command", "--", "sleep", "3600")
	t.Cleanup(func() {
		_, _ = exec.Command(os.Getenv("BOXER_CLUSTER"), "kubectl", "delete", "pod", pod, "--grace-period=0", "--force", "--wait=false").CombinedOutput()
	})
	kubectl(t, "wait", "--for=condition=Ready", "pod/"+pod, "--timeout=3m")

	// reaches says whether a TCP connection from pod (in namespace ns) to
	// addr:port opens within 5 s; why is what the probe said.
	reaches := func(ns, pod, addr, port string) (bool, string) {
		out, err := exec.Command(os.Getenv("BOXER_CLUSTER"), "kubectl", "-n", ns, "exec", pod, "--",
			"timeout", "5", "bash", "-c", "exec 3<>/dev/tcp/"+addr+"/"+port+" && echo open").CombinedOutput()
		return err == nil && strings.Contains(string(out), "open"), strings.TrimSpace(string(out))
	}
	type probe struct{ what, addr, port string }
	pools := []probe{{"the runc pool (same node)", runc, "8080"}, {"the runsc pool (other node)", runsc, "8080"}}
	fleetPort := probe{"a boxer pod's fleet port", peer, "8081"}

	for _, p := range append(pools, fleetPort) {
		if ok, _ := reaches("default", pod, p.addr, p.port); ok {
			t.Errorf("a pod without boxer.dev/client=true reached %s (%s:%s)", p.what, p.addr, p.port)
		}
	}
	kubectl(t, "label", "pod", pod, "boxer.dev/client=true")
	for _, p := range pools {
		var why string
		ok := false
		for deadline := time.Now().Add(time.Minute); !ok && time.Now().Before(deadline); time.Sleep(time.Second) {
			ok, why = reaches("default", pod, p.addr, p.port)
		}
		if !ok {
			t.Errorf("a pod labelled boxer.dev/client=true does not reach %s (%s:%s): %s", p.what, p.addr, p.port, why)
		}
	}
	if ok, _ := reaches("default", pod, fleetPort.addr, fleetPort.port); ok {
		t.Errorf("a client pod reached %s (%s:%s): only boxer's pods may", fleetPort.what, fleetPort.addr, fleetPort.port)
	}
	from := kubectl(t, "-n", "boxer", "get", "pods", "-l", "app.kubernetes.io/name=boxer", "--field-selector", "spec.nodeName=n1", "-o", "jsonpath={.items[0].metadata.name}")
	if ok, why := reaches("boxer", from, fleetPort.addr, fleetPort.port); !ok {
		t.Errorf("boxer's pod %s does not reach %s (%s:%s): %s", from, fleetPort.what, fleetPort.addr, fleetPort.port, why)
	}
}
