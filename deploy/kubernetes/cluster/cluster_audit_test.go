//go:build kubecluster

package cluster

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
)

// auditLine is what the test reads of a line of a pod's audit log (its
// stdout: --audit-log=/dev/stdout).
type auditLine struct {
	Event   string `json:"event"`
	Session string `json:"session"`
	Caller  string `json:"caller"`
	Member  string `json:"member"`
}

// auditOf is the audit lines of the boxer pod on node about session id.
func auditOf(t *testing.T, node, id string) (pod string, lines []auditLine) {
	t.Helper()
	pod = kubectl(t, "-n", "boxer", "get", "pods", "-l", "app.kubernetes.io/name=boxer", "--field-selector", "spec.nodeName="+node, "-o", "jsonpath={.items[0].metadata.name}")
	sc := bufio.NewScanner(strings.NewReader(kubectl(t, "-n", "boxer", "logs", pod, "-c", "boxer")))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l auditLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Event != "" && l.Session == id {
			lines = append(lines, l)
		}
	}
	return pod, lines
}

// TestClusterAuditForward: a session call that reaches the pod on n2 and is
// forwarded to the pod on n1, which holds the session, leaves a line on
// each: n2's says it forwarded it, and to which member; n1's names the
// client as n2 saw it (the test, on n1's address), not n2's pod.
func TestClusterAuditForward(t *testing.T) {
	f := getFleet(t)
	id := f.markedSession(t, f.runc, f.runc, "audited")
	if got := f.readMark(t, f.runsc, id); got != "audited" {
		t.Fatalf("the mark read through the other node: %q", got)
	}
	pod2, on2 := auditOf(t, "n2", id)
	var fwd *auditLine
	for i, l := range on2 {
		if l.Event == "request_forwarded" {
			fwd = &on2[i]
		}
	}
	if fwd == nil || fwd.Member == "" || fwd.Caller == "" {
		t.Fatalf("no request_forwarded line with its member and caller on %s (n2), which forwarded the call: %+v", pod2, on2)
	}
	client := strings.Fields(fwd.Caller)[0]
	pod2IP := kubectl(t, "-n", "boxer", "get", "pod", pod2, "-o", "jsonpath={.status.podIP}")
	pod1, on1 := auditOf(t, "n1", id)
	seen := false
	for _, l := range on1 {
		host := strings.Fields(l.Caller + " ")[0]
		if host == pod2IP {
			t.Errorf("%s (n1) names the forwarding pod %s as the caller: %+v", pod1, pod2IP, l)
		}
		seen = seen || host == client && l.Caller == fwd.Caller
	}
	if !seen {
		t.Errorf("%s (n1), which held the session, has no line naming the client %q as %s (n2) saw it: %+v", pod1, fwd.Caller, pod2, on1)
	}
}
