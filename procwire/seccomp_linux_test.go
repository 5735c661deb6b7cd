package procwire

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"testing"

	"github.com/boxer-dev/boxer/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// straceLine is a line of strace -f -o: the PID, and the call's name, at
// its start or where it resumes.
var straceLine = regexp.MustCompile(`^(\d+) +(?:<\.\.\. )?([a-z0-9_]+)(?:\(| resumed>)`)

var vforked = regexp.MustCompile(`^(\d+) +(?:<\.\.\. )?vfork(?:\(\)| resumed>\)) += (\d+)`)

// TestSeccompAllows: every system call boxer-procd makes, and its
// children make before they become their programs, is one the default
// seccomp profile allows (seccomp/): a session with pipes, stdin, a
// terminal and its resize, signals to a process and a group, failed
// starts and releases, traced with strace.
func TestSeccompAllows(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "trace")
	s := startServer(t, "strace", "-f", "-qq", "-o", trace)
	c := dial(t, s, Limits{})
	ctx := ctxFor(t)
	run(t, c, Spec{Args: []string{"echo", "hi"}, Env: env}, nil)
	run(t, c, Spec{Args: []string{"cat"}, Env: env, Cwd: "/tmp"}, make([]byte, 200<<10))
	run(t, c, Spec{Args: []string{"sh", "-c", "sleep 0.2; tty"}, Env: env, PTY: &Size{Rows: 5, Cols: 5}}, []byte("x"))
	p, err := c.Start(ctx, Spec{Args: []string{"sh", "-c", "read x; sleep 100"}, Env: env, Stdin: true, PTY: &Size{Rows: 5, Cols: 5}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Resize(Size{Rows: 9, Cols: 9}); err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(9, true); err != nil {
		t.Fatal(err)
	}
	collect(t, p, nil)
	p, err = c.Start(ctx, Spec{Args: []string{"sleep", "100"}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(15, false); err != nil {
		t.Fatal(err)
	}
	collect(t, p, nil)
	for _, spec := range []Spec{{Args: []string{"no-such-program"}, Env: env}, {Args: []string{"true"}, Env: env, Cwd: "/no/such"}} {
		if _, err := c.Start(ctx, spec); err == nil {
			t.Fatalf("%+v started", spec)
		}
	}
	s.stop(t)

	f, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Two passes: a vfork child's calls come before its parent's vfork
	// returns.
	var lines [][]string
	procd, children, execd := "", map[string]bool{}, map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := straceLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if procd == "" {
			procd = m[1]
		}
		if v := vforked.FindStringSubmatch(sc.Text()); v != nil && v[1] == procd {
			children[v[2]] = true
		}
		lines = append(lines, m[1:])
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// boxer-procd's own calls (from strace's execve of it), and a child's
	// up to its program.
	used := map[string]bool{}
	for _, l := range lines {
		pid, name := l[0], l[1]
		switch {
		case pid == procd:
			used[name] = true
		case children[pid] && !execd[pid]:
			used[name] = true
			execd[pid] = name == "execve"
		}
	}
	if procd == "" || len(children) < 5 {
		t.Fatalf("the trace has boxer-procd %q and %d children: did strace run?", procd, len(children))
	}
	// What the profile allows, some with conditions on arguments (clone
	// without namespace flags, which vfork is not).
	var allowed []string
	for _, r := range seccomp.DefaultProfile().Syscalls {
		if r.Action == specs.ActAllow {
			allowed = append(allowed, r.Names...)
		}
	}
	var missing, names []string
	for name := range used {
		names = append(names, name)
		if !slices.Contains(allowed, name) {
			missing = append(missing, name)
		}
	}
	sort.Strings(names)
	t.Logf("boxer-procd and its children before exec made %d kinds of system call: %v", len(names), names)
	if len(missing) > 0 {
		t.Errorf("the default seccomp profile refuses %v, which boxer-procd makes", missing)
	}
}
