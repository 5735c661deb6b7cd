package e2b

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/e2b/interp"
)

// TestRecords: a sandbox's record comes back whole from a second opening
// of the directory (the next server), its tokens derived again and never
// written; a record sealed for another ID, another node's or damaged is
// refused and removed; a FIFO planted as a record does not block the read.
func TestRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "e2b", "ns")
	rs, err := openRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	sb := &sandbox{ID: "bxs-0123456789abcdef", Caller: "token:ab", Template: "base", Lang: "python",
		Env: map[string]string{"API_KEY": "very-secret-value"}, Metadata: map[string]string{"k": "v"},
		Started: time.Now().Round(0), CPUs: 1, MemoryMB: 512, AllowHosts: []string{"pypi.test"}, Linked: true,
		auto: &autoPause{resume: true, timeout: time.Minute, at: time.Now().Add(time.Minute).Round(0)}}
	sb.EnvdToken, sb.TrafficToken = rs.tokens(sb.ID)
	rs.save(sb, []interp.CodeContext{{ID: "c1", Language: "python", Cwd: "/home/user"}})

	raw, err := os.ReadFile(rs.path(sb.ID))
	if err != nil {
		t.Fatal(err)
	}
	for _, clear := range []string{"very-secret-value", sb.EnvdToken, sb.TrafficToken, "pypi.test"} {
		if bytes.Contains(raw, []byte(clear)) {
			t.Errorf("the record holds %q in clear", clear)
		}
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("records directory mode %v, want 0700", st.Mode().Perm())
	}

	next, err := openRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	if e, tr := next.tokens(sb.ID); e != sb.EnvdToken || tr != sb.TrafficToken {
		t.Errorf("the next server's tokens differ")
	}
	if e, _ := next.tokens("bxs-other"); e == sb.EnvdToken {
		t.Errorf("two sandboxes share a token")
	}
	recs, bad := next.load()
	if len(bad) != 0 || len(recs) != 1 {
		t.Fatalf("load: %v %v", recs, bad)
	}
	got := recs[0]
	if got.Env["API_KEY"] != "very-secret-value" || got.Metadata["k"] != "v" || !got.Linked || got.Auto == nil ||
		!got.Auto.Resume || got.Auto.Timeout != time.Minute || !got.Auto.At.Equal(sb.auto.at) || len(got.Contexts) != 1 || !got.Started.Equal(sb.Started) {
		t.Errorf("the record came back as %+v", got)
	}

	// Sealed for its ID: copied under another's name, it is refused.
	other := "bxs-fedcba9876543210"
	if err := os.WriteFile(next.path(other), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	// Another node's secret cannot open it.
	stranger, err := openRecords(filepath.Join(t.TempDir(), "x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stranger.read(sb.ID); err == nil {
		t.Errorf("another secret opened a record")
	}
	// Damaged.
	if err := os.WriteFile(next.path("bxs-damaged"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A FIFO the read must not wait on.
	if err := syscall.Mkfifo(next.path("bxs-fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		recs, bad = next.load()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("load blocked on a FIFO")
	}
	if len(recs) != 1 || len(bad) != 3 {
		t.Errorf("load with three bad records: %d good, bad %v", len(recs), bad)
	}
	for _, id := range []string{other, "bxs-damaged", "bxs-fifo"} {
		if _, err := os.Lstat(next.path(id)); !os.IsNotExist(err) {
			t.Errorf("bad record %s left: %v", id, err)
		}
	}

	next.remove(sb.ID)
	if recs, _ := next.load(); len(recs) != 0 {
		t.Errorf("a removed record came back")
	}
}

// TestRecordsSecret: a node secret of the wrong size is refused with what
// to do; a record ID that is not a file name is never a path.
func TestRecordsSecret(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, secretFile), []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := openRecords(dir); err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("a short secret: %v", err)
	}
	for _, id := range []string{"", "../x", "a/b", ".", strings.Repeat("a", 200)} {
		if validID(id) {
			t.Errorf("validID(%q)", id)
		}
	}
}

// TestNoRecords: a server without a records directory keeps nothing and
// its tokens are random.
func TestNoRecords(t *testing.T) {
	var rs *records
	a, b := rs.tokens("bxs-1")
	c, _ := rs.tokens("bxs-1")
	if a == b || a == c || len(a) != 48 {
		t.Errorf("tokens without records: %q %q %q", a, b, c)
	}
	rs.save(&sandbox{ID: "bxs-1"}, nil)
	rs.remove("bxs-1")
}
