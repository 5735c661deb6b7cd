package contract

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// TestStandbyRequestKeepsShape: what the CLI hands its standby maker (as
// JSON, through a pipe) normalizes to the run's own shape, with nothing of
// what is delivered, for requests that set every shape field or none.
func TestStandbyRequestKeepsShape(t *testing.T) {
	reqs := []Request{
		{Lang: "python", Code: []byte("print(1)")},
		{
			Lang: "bash", Code: []byte("echo"), Image: "other/image", Env: []string{"A=1", "B=2"},
			Timeout: time.Minute, MemoryBytes: 100 << 20, CPUs: 0.5, Pids: 10, TmpBytes: 8 << 20, OutputLimit: 10,
			UID: 0, GID: 0, UserSet: true, Runtime: "runsc", CopyIn: t.TempDir(), CopyOut: "/out",
			Stdin:       strings.NewReader("x"),
			Files:       map[string][]byte{"a": []byte("b")},
			ReturnFiles: []string{"*.png"},
			Seccomp:     &specs.LinuxSeccomp{DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{{Names: []string{"read"}, Action: specs.ActAllow}}},
		},
		{Image: "boxer/python", Args: []string{"python3", "-c", "print(1)"}, UID: 1000, GID: 1000, UserSet: true},
		{Lang: "python-data", Code: []byte("print(1)"), Preload: []string{"numpy", "pandas"}},
	}
	for _, req := range reqs {
		want, err := req.Normalize()
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(StandbyRequest(want))
		if err != nil {
			t.Fatal(err)
		}
		var got Request
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if got.Code != nil || got.CopyIn != "" || got.CopyOut != "" || got.ReturnFiles != nil || got.Timeout != 0 || got.OutputLimit != 0 {
			t.Errorf("the standby's request carries what is delivered: %s", data)
		}
		got, err = got.Normalize()
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if got.Shape() != want.Shape() || StandbyKey(got) != StandbyKey(want) {
			t.Errorf("shape changed on the way:\n got %+v\nwant %+v", got.Shape(), want.Shape())
		}
	}
}

// TestStandbyEligible: runs with secrets or egress neither take nor leave
// a standby; others do.
func TestStandbyEligible(t *testing.T) {
	for _, tc := range []struct {
		req  Request
		want bool
	}{
		{Request{Lang: "python"}, true},
		{Request{Lang: "python", Runtime: "runsc"}, true},
		{Request{Lang: "python", Secrets: []string{"TOKEN"}}, false},
		{Request{Lang: "python", AllowHosts: []string{"example.com"}}, false},
	} {
		if got := StandbyEligible(tc.req); got != tc.want {
			t.Errorf("StandbyEligible(%+v) = %v, want %v", tc.req, got, tc.want)
		}
	}
}

// TestStandbyKeyDiffers: shapes that differ have different keys.
func TestStandbyKeyDiffers(t *testing.T) {
	a, _ := Request{Lang: "python"}.Normalize()
	b, _ := Request{Lang: "python", MemoryBytes: 100 << 20}.Normalize()
	if StandbyKey(a) == StandbyKey(b) || len(StandbyKey(a)) != 24 {
		t.Errorf("keys %q and %q", StandbyKey(a), StandbyKey(b))
	}
}
