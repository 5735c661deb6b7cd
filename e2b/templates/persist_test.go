package templates

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKept: a server's templates are there for the next one on its
// directory, a built one with its image and commands, one that was being
// built failed (to be built again), the keys' names kept, never a key.
func TestKept(t *testing.T) {
	dir := t.TempDir()
	ts, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	built, err := ts.Request("token:aa", Request{Name: "built"})
	if err != nil {
		t.Fatal(err)
	}
	ts.mu.Lock()
	tm := ts.byID[built.ID]
	tm.Image, tm.StartCmd, tm.ReadyCmd, tm.Workdir, tm.Updated = "boxer/e2b-"+tm.ID, "serve", "curl -sf localhost", "/app", time.Now()
	tm.build.status = StatusReady
	ts.saveLocked()
	ts.mu.Unlock()
	pending, err := ts.Request("token:bb", Request{Name: "pending"})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, storeFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the kept file: %v %v, want mode 0600", st, err)
	}

	next, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	got, ok := next.View("token:aa", "built")
	if !ok || got.Image != tm.Image || got.StartCmd != "serve" || got.ReadyCmd != "curl -sf localhost" || got.Workdir != "/app" || got.BuildStatus != StatusReady || got.BuildID != built.BuildID {
		t.Errorf("the built template on the next server: %+v %v", got, ok)
	}
	if _, ok := next.View("token:bb", "built"); ok {
		t.Error("another key sees the built template on the next server")
	}
	st, err := next.Status("token:bb", pending.ID, pending.BuildID, 0, 100)
	if err != nil || st.Status != StatusError || !strings.Contains(st.Reason, "build the template again") {
		t.Errorf("the build the server stopped during, on the next server: %+v %v", st, err)
	}
	if _, err := next.Request("token:bb", Request{Name: "pending"}); err != nil {
		t.Errorf("building it again on the next server: %v", err)
	}

	if err := os.WriteFile(filepath.Join(dir, storeFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Dir: dir}); err == nil || !strings.Contains(err.Error(), "move it away") {
		t.Errorf("a broken kept file: %v, want an error saying what to do", err)
	}
}
