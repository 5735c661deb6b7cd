package reaper

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRunDirVerdict: the reaper never removes a run directory whose owner
// file is being written (missing or empty) unless it is old, nor one whose
// owner lives.
func TestRunDirVerdict(t *testing.T) {
	missing := os.ErrNotExist
	for _, c := range []struct {
		name  string
		owner string
		err   error
		age   time.Duration
		want  dirVerdict
	}{
		{"being made, no owner yet", "", missing, time.Second, keepDir},
		{"being made, owner half-written", "", nil, time.Second, keepDir},
		{"abandoned before its owner", "", missing, 2 * time.Minute, removeDir},
		{"live owner", Self(), nil, time.Hour, keepDir},
		{"dead owner", "1:0", nil, time.Second, removeUnlessContainer},
		{"garbage owner", "x", nil, time.Second, removeUnlessContainer},
	} {
		if got := runDirVerdict([]byte(c.owner), c.err, c.age); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// TestMakeRunDir: a run directory carries this process as its owner and
// its namespace, and RemoveRunDir removes it (twice is fine).
func TestMakeRunDir(t *testing.T) {
	runs := t.TempDir()
	dir, err := MakeRunDir(runs, "ns1", "bx-1")
	if err != nil {
		t.Fatal(err)
	}
	if ns := RunDirNamespace(dir); ns != "ns1" {
		t.Errorf("namespace %q, want ns1", ns)
	}
	owner, err := os.ReadFile(dir + "/" + ownerFile)
	if err != nil || string(owner) != Self() || !Alive(string(owner)) {
		t.Errorf("owner %q, %v; want %q, alive", owner, err, Self())
	}
	for range 2 {
		if err := RemoveRunDir(dir); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("run directory still there: %v", err)
	}
}

// TestAliveZombie: a process that has exited is dead to the reaper even
// before its parent waits for it.
func TestAliveZombie(t *testing.T) {
	cmd := exec.Command("sleep", "0.2")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	owner := strconv.Itoa(pid) + ":" + processStart(pid)
	if !Alive(owner) {
		t.Fatalf("%s is not alive while it sleeps", owner)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if i := strings.LastIndexByte(string(data), ')'); i >= 0 && strings.HasPrefix(string(data[i+1:]), " Z") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child never became a zombie")
		}
	}
	if Alive(owner) {
		t.Errorf("zombie %s is alive to the reaper", owner)
	}
	_ = cmd.Wait()
}

// TestHandRunDir: a run directory handed to another live process names it,
// and OwnerOf names a process as Self does.
func TestHandRunDir(t *testing.T) {
	if got := OwnerOf(os.Getpid()); got != Self() {
		t.Errorf("OwnerOf(self) = %q, want %q", got, Self())
	}
	dir, err := MakeRunDir(t.TempDir(), "ns1", "bx-1")
	if err != nil {
		t.Fatal(err)
	}
	if got := RunDirOwner(dir); got != Self() {
		t.Errorf("owner %q, want %q", got, Self())
	}
	parent := OwnerOf(os.Getppid())
	if err := HandRunDir(dir, parent); err != nil {
		t.Fatal(err)
	}
	if got := RunDirOwner(dir); got != parent || !Alive(got) {
		t.Errorf("owner after the hand-off %q (alive %v), want %q", got, Alive(got), parent)
	}
}
