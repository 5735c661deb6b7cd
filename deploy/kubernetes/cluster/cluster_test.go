//go:build kubecluster

package cluster

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The tests run inside node n1's network namespace (cluster.sh test), where
// the Services' addresses lead to the pods: the Service boxer to the runc
// pool's one pod, on n1; boxer-runsc to the runsc pool's, on n2. Each
// Service has one node behind it, so a call through one and the next
// through the other reach two different nodes.

// cluster runs cluster.sh with args and returns its output.
func cluster(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(os.Getenv("BOXER_CLUSTER"), args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("cluster.sh %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return strings.TrimSpace(string(out))
}

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	return cluster(t, append([]string{"kubectl"}, args...)...)
}

// fleet is what the tests need of the cluster.
type fleet struct {
	token       string
	runc, runsc string // the Services' base URLs
}

func getFleet(t *testing.T) fleet {
	t.Helper()
	if os.Getenv("BOXER_CLUSTER") == "" {
		t.Fatal("BOXER_CLUSTER is not set: run 'make test-cluster'")
	}
	tok, err := base64.StdEncoding.DecodeString(kubectl(t, "-n", "boxer", "get", "secret", "boxer-token", "-o", "jsonpath={.data.token}"))
	if err != nil {
		t.Fatalf("decoding the token: %v", err)
	}
	svc := func(name string) string {
		return "http://" + kubectl(t, "-n", "boxer", "get", "svc", name, "-o", "jsonpath={.spec.clusterIP}") + ":8080"
	}
	return fleet{token: string(tok), runc: svc("boxer"), runsc: svc("boxer-runsc")}
}

// call is one request to base with the fleet's token, on a new connection
// each (a Service balances connections).
func (f fleet) call(t *testing.T, base, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+f.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	c := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s%s: %v", method, base, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

type runResult struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code"`
}

func (f fleet) run(t *testing.T, base, path string, req map[string]any) string {
	t.Helper()
	body, _ := json.Marshal(req)
	code, out := f.call(t, base, "POST", path, string(body))
	var res runResult
	if code != 200 || json.Unmarshal([]byte(out), &res) != nil || res.Status != "exited" || res.ExitCode != 0 {
		t.Fatalf("POST %s%s %s: %d %s", base, path, body, code, out)
	}
	return strings.TrimSpace(res.Stdout)
}

func (f fleet) newSession(t *testing.T, base string) string {
	t.Helper()
	code, body := f.call(t, base, "POST", "/v1/sessions", `{"lang":"python"}`)
	var s struct {
		ID string `json:"id"`
	}
	if code != 201 || json.Unmarshal([]byte(body), &s) != nil || s.ID == "" {
		t.Fatalf("POST %s/v1/sessions: %d %s", base, code, body)
	}
	return s.ID
}

func (f fleet) remove(t *testing.T, base, id string) {
	t.Helper()
	if code, body := f.call(t, base, "DELETE", "/v1/sessions/"+id, ""); code != 204 {
		t.Fatalf("DELETE %s/v1/sessions/%s: %d %s", base, id, code, body)
	}
}

// markedSession makes a session through base whose /workspace/mark holds
// mark; the test's end removes it through cleanup if it is still there.
func (f fleet) markedSession(t *testing.T, base, cleanup, mark string) string {
	t.Helper()
	id := f.newSession(t, base)
	t.Cleanup(func() { f.call(t, cleanup, "DELETE", "/v1/sessions/"+id, "") })
	f.run(t, base, "/v1/sessions/"+id+"/runs", map[string]any{"code": "open('/workspace/mark', 'w').write(" + strconv.Quote(mark) + ")"})
	return id
}

// readMark is session id's /workspace/mark, read through base.
func (f fleet) readMark(t *testing.T, base, id string) string {
	t.Helper()
	return f.run(t, base, "/v1/sessions/"+id+"/runs", map[string]any{"code": "print(open('/workspace/mark').read())"})
}

// kernel is what a sandbox's uname says: the host's on runc, gVisor's own
// (4.4.0) on runsc.
const kernel = "import platform; print(platform.release())"

func hostKernel(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("uname", "-r").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// TestClusterRuns runs one sandbox on each pool, through its Service.
func TestClusterRuns(t *testing.T) {
	f := getFleet(t)
	host := hostKernel(t)
	if got := f.run(t, f.runc, "/v1/runs", map[string]any{"lang": "python", "code": kernel}); got != host {
		t.Errorf("a run through the Service boxer says kernel %q, want the host's %q (runc)", got, host)
	}
	if got := f.run(t, f.runsc, "/v1/runs", map[string]any{"lang": "python", "code": kernel}); got == host || got == "" {
		t.Errorf("a run through the Service boxer-runsc says kernel %q, want gVisor's, not the host's %q", got, host)
	}
	// The runc pool has no runsc: the refusal says where to send it.
	code, body := f.call(t, f.runc, "POST", "/v1/runs", `{"lang":"python","code":"print(1)","runtime":"runsc"}`)
	if code < 400 || !strings.Contains(body, "boxer-runsc") || strings.Contains(body, "make deps") {
		t.Errorf("a runsc run through the Service boxer (the runc pool): %d %s, want it refused naming the Service boxer-runsc", code, body)
	}
}

// TestClusterSessionAcrossNodes makes a session through one node, uses it
// and removes it through the other: the call is forwarded to the holder.
func TestClusterSessionAcrossNodes(t *testing.T) {
	f := getFleet(t)
	for _, c := range []struct{ name, made, used string }{{"made-on-runc", f.runc, f.runsc}, {"made-on-runsc", f.runsc, f.runc}} {
		t.Run(c.name, func(t *testing.T) {
			id := f.markedSession(t, c.made, c.used, c.name)
			if got := f.readMark(t, c.used, id); got != c.name {
				t.Errorf("the session's file read through the other node: %q, want %q", got, c.name)
			}
			f.remove(t, c.used, id)
			if code, body := f.call(t, c.made, "GET", "/v1/sessions/"+id+"/stats", ""); code != 404 {
				t.Errorf("the removed session through the node that made it: %d %s, want 404", code, body)
			}
		})
	}
}

// boxerPod is the name of the pool's pod on node, and its boxer
// container's ID and restart count.
func boxerPod(t *testing.T, ds, node string) (name, container string, restarts int) {
	t.Helper()
	out := kubectl(t, "-n", "boxer", "get", "pods", "-l", "app.kubernetes.io/name=boxer", "--field-selector", "spec.nodeName="+node,
		"-o", `jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp} {.status.containerStatuses[0].containerID} {.status.containerStatuses[0].restartCount}{"\n"}{end}`)
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && strings.HasPrefix(f[0], ds+"-") { // not being deleted
			fmt.Sscan(f[2], &restarts)
			return f[0], strings.TrimPrefix(f[1], "containerd://"), restarts
		}
	}
	t.Fatalf("no pod of %s on %s: %q", ds, node, out)
	return
}

// waitPod waits up to 3 minutes for the pool's pod on node that is not
// old to be Ready, and returns its name.
func waitPod(t *testing.T, ds, node, old string) string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		out, err := exec.Command(os.Getenv("BOXER_CLUSTER"), "kubectl", "-n", "boxer", "get", "pods", "-l", "app.kubernetes.io/name=boxer",
			"--field-selector", "spec.nodeName="+node,
			"-o", `jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`).Output()
		for _, l := range strings.Split(string(out), "\n") {
			if f := strings.Fields(l); err == nil && len(f) == 2 && f[0] != old && strings.HasPrefix(f[0], ds+"-") && f[1] == "True" {
				return f[0]
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Ready pod of %s on %s but %s within 3 minutes: %v %s", ds, node, old, err, out)
		}
		time.Sleep(time.Second)
	}
}

// waitServed waits up to a minute for base to answer /healthz with 200:
// its Service has a Ready pod behind it and kube-proxy knows it.
func (f fleet) waitServed(t *testing.T, base string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := c.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/healthz: not 200 within a minute: %v", base, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestClusterSessionOutlivesKill SIGKILLs the boxer serve of the pod that
// holds a session; the kubelet starts it again and the session is still
// there, with its files, through either node.
func TestClusterSessionOutlivesKill(t *testing.T) {
	f := getFleet(t)
	id := f.markedSession(t, f.runc, f.runc, "before the kill")

	pod, ctr, restarts := boxerPod(t, "boxer", "n1")
	cluster(t, "exec", "n1", "ctr", "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", ctr)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		_, _, r := boxerPod(t, "boxer", "n1")
		ready := kubectl(t, "-n", "boxer", "get", "pod", pod, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if r > restarts && ready == "True" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s: not restarted and Ready within 3 minutes (restarts %d, ready %s)", pod, r, ready)
		}
		time.Sleep(time.Second)
	}
	f.waitServed(t, f.runc)
	for _, base := range []string{f.runc, f.runsc} {
		if got := f.readMark(t, base, id); got != "before the kill" {
			t.Errorf("the session after its server's SIGKILL, through %s: %q, want %q", base, got, "before the kill")
		}
	}
	f.remove(t, f.runsc, id)
}

// TestClusterDrain deletes the pod holding a session: it drains (out of its
// Service, /healthz 503 draining), the session is still answered through
// the other node, and once the session is removed the pod stops at once and
// the DaemonSet's next one becomes Ready.
func TestClusterDrain(t *testing.T) {
	f := getFleet(t)
	id := f.newSession(t, f.runsc)
	defer f.call(t, f.runc, "DELETE", "/v1/sessions/"+id, "")
	pod, _, _ := boxerPod(t, "boxer-runsc", "n2")
	podIP := kubectl(t, "-n", "boxer", "get", "pod", pod, "-o", "jsonpath={.status.podIP}")
	kubectl(t, "-n", "boxer", "delete", "pod", pod, "--wait=false")
	f.waitDraining(t, podIP)
	if got := f.run(t, f.runc, "/v1/sessions/"+id+"/runs", map[string]any{"code": "print('still here')"}); got != "still here" {
		t.Errorf("the draining pod's session through the other node: %q", got)
	}
	if phase := kubectl(t, "-n", "boxer", "get", "pod", pod, "-o", "jsonpath={.metadata.deletionTimestamp}"); phase == "" {
		t.Errorf("pod %s is not being deleted", pod)
	}
	start := time.Now()
	f.remove(t, f.runc, id)
	for {
		out, err := exec.Command(os.Getenv("BOXER_CLUSTER"), "kubectl", "-n", "boxer", "get", "pod", pod, "-o", "name").CombinedOutput()
		if err != nil && bytes.Contains(out, []byte("NotFound")) {
			break
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("pod %s still there 2 minutes after its last session went: %s", pod, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("the drained pod stopped %.1fs after its last session was removed", time.Since(start).Seconds())
	// The DaemonSet's next pod, Ready and behind the Service: a rollout
	// status says done as soon as the old pod is gone (the template did
	// not change), before the Service has the new one.
	next := waitPod(t, "boxer-runsc", "n2", pod)
	f.waitServed(t, f.runsc)
	t.Logf("the next pod, %s, is Ready and served %.1fs after its last session was removed", next, time.Since(start).Seconds())
	if got := f.run(t, f.runsc, "/v1/runs", map[string]any{"lang": "python", "code": "print('new pod')"}); got != "new pod" {
		t.Errorf("a run on the runsc pool's new pod: %q", got)
	}
}

// TestClusterRollout restarts the runc pool's DaemonSet (kubectl rollout
// restart: a new template) with a session open on its node: the old pod
// drains, the session is still answered through the other node, and once
// it is removed the rollout ends with a new pod, Ready and served.
func TestClusterRollout(t *testing.T) {
	f := getFleet(t)
	id := f.markedSession(t, f.runc, f.runsc, "through the rollout")
	old, _, _ := boxerPod(t, "boxer", "n1")
	podIP := kubectl(t, "-n", "boxer", "get", "pod", old, "-o", "jsonpath={.status.podIP}")
	kubectl(t, "-n", "boxer", "rollout", "restart", "daemonset/boxer")
	f.waitDraining(t, podIP)
	if got := f.readMark(t, f.runsc, id); got != "through the rollout" {
		t.Errorf("the session of the pod the rollout drains, through the other node: %q", got)
	}
	start := time.Now()
	f.remove(t, f.runsc, id)
	next := waitPod(t, "boxer", "n1", old)
	kubectl(t, "-n", "boxer", "rollout", "status", "daemonset/boxer", "--timeout=3m")
	f.waitServed(t, f.runc)
	t.Logf("the rollout's pod %s is Ready and served %.1fs after the last session of %s was removed", next, time.Since(start).Seconds(), old)
	if got := f.run(t, f.runc, "/v1/runs", map[string]any{"lang": "python", "code": "print('after the rollout')"}); got != "after the rollout" {
		t.Errorf("a run on the runc pool after the rollout: %q", got)
	}
}

// waitDraining waits up to a minute for the pod at podIP to answer
// /healthz 503 draining.
func (f fleet) waitDraining(t *testing.T, podIP string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		code, body := f.call(t, "http://"+podIP+":8080", "GET", "/healthz", "")
		if code == 503 && strings.Contains(body, `"draining":true`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pod at %s: /healthz %d %s, want 503 draining", podIP, code, body)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestClusterNodeLeft takes node n2 out of the fleet while a session is
// open there (a NoExecute taint no boxer pod tolerates, its pod deleted at
// once): calls for the session through the other node get 410 Gone, not
// 503 and not a hang. With the taint gone, the node's next pod answers for
// the session again (it is the node's, in its containerd), files and all.
func TestClusterNodeLeft(t *testing.T) {
	f := getFleet(t)
	id := f.markedSession(t, f.runsc, f.runc, "on n2")
	pod, _, _ := boxerPod(t, "boxer-runsc", "n2")
	const taint = "boxer.dev/test-left=true:NoExecute"
	kubectl(t, "taint", "node", "n2", taint)
	tainted := true
	untaint := func() {
		if tainted {
			tainted = false
			kubectl(t, "taint", "node", "n2", "boxer.dev/test-left-")
		}
	}
	defer untaint()
	kubectl(t, "-n", "boxer", "delete", "pod", pod, "--grace-period=0", "--force")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, body := f.call(t, f.runc, "GET", "/v1/sessions/"+id+"/stats", "")
		if code == 410 {
			t.Logf("the session of the node that left: 410 %s", strings.TrimSpace(body))
			break
		}
		if code != 503 && code != 200 {
			t.Fatalf("the session of the node that left, through the other node: %d %s, want 410 (503 while its pod is still listed)", code, body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session of the node that left: still %d %s after 2 minutes, want 410", code, body)
		}
		time.Sleep(time.Second)
	}
	if out := kubectl(t, "-n", "boxer", "get", "pods", "--field-selector", "spec.nodeName=n2", "-o", "name"); out != "" {
		t.Errorf("boxer pods on the node that left: %s", out)
	}
	untaint()
	waitPod(t, "boxer-runsc", "n2", pod)
	f.waitServed(t, f.runsc)
	// The other node learns of the member back from DNS: its list of
	// members is kept a few seconds, and CoreDNS caches the answer.
	deadline = time.Now().Add(time.Minute)
	for {
		code, body := f.call(t, f.runc, "GET", "/v1/sessions/"+id+"/stats", "")
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session once its node's pod is back, through the other node: still %d %s after a minute", code, body)
		}
		time.Sleep(time.Second)
	}
	if got := f.readMark(t, f.runc, id); got != "on n2" {
		t.Errorf("the session once its node's pod is back, through the other node: %q, want %q", got, "on n2")
	}
	f.remove(t, f.runc, id)
}
