package procwire

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// statusKiB reads a "Name: N kB" line of /proc/PID/status.
func statusKiB(t *testing.T, pid int, name string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatalf("%s of %d: %q", name, pid, line)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", name, pid)
	return 0
}

// cpuTicks is a process's user and system time, in clock ticks.
func cpuTicks(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return u + s
}

// unread is what the client holds of a stream, received and not read.
func unread(p *Process, s int) int {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	return len(p.out[s].data) - p.out[s].off
}

// TestSlowReader: a client that reads nothing stops a producer once its
// window is full: the producer blocks, and neither the server's memory
// nor the client's grows; reading lets it go on.
func TestSlowReader(t *testing.T) {
	s := startServer(t)
	const window = 256 << 10
	c := dial(t, s, Limits{Window: window})
	p, err := c.Start(ctxFor(t), Spec{Args: []string{"yes", "a line of output from yes"}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); unread(p, Stdout) < window; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) || c.Err() != nil {
			t.Fatalf("the window did not fill: %d bytes unread (%v)", unread(p, Stdout), c.Err())
		}
	}
	// What is in flight settles: the pipe fills and yes blocks in write.
	time.Sleep(200 * time.Millisecond)
	procd := s.cmd.Process.Pid
	rss, ticks := statusKiB(t, procd, "VmRSS"), cpuTicks(t, p.PID())
	time.Sleep(time.Second)
	rss2, ticks2 := statusKiB(t, procd, "VmRSS"), cpuTicks(t, p.PID())
	t.Logf("boxer-procd VmRSS %d kB then %d kB; yes's CPU %d ticks then %d", rss, rss2, ticks, ticks2)
	if got := unread(p, Stdout); got != window {
		t.Errorf("the client holds %d bytes, want its window %d", got, window)
	}
	if rss2 > rss+16 || rss2 > 1024 {
		t.Errorf("boxer-procd's VmRSS went from %d kB to %d kB while nobody read: want it flat and under 1 MiB", rss, rss2)
	}
	if ticks2 > ticks+1 {
		t.Errorf("yes ran on for %d ticks with nobody reading: want it blocked", ticks2-ticks)
	}
	// Reading 4 MiB lets it run again.
	if n, err := io.CopyN(io.Discard, p.Stdout(), 4<<20); err != nil {
		t.Fatalf("reading on after %d bytes: %v", n, err)
	}
	if err := p.Signal(9, true); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, p.Stdout())
	if x, err := p.Wait(ctxFor(t)); err != nil || x.Signal != 9 {
		t.Errorf("yes ended %+v %v", x, err)
	}
}

// dying is a client's reader that a test can end mid-frame, as a keeper
// that dies: it reads a few bytes at a time, and after die its reads
// fail at once (the pipe's deadline interrupts one under way).
type dying struct {
	f      *os.File
	dead   atomic.Bool
	reads  sync.Mutex // held by a read under way
	chunks int
}

func (d *dying) Read(b []byte) (int, error) {
	d.reads.Lock()
	defer d.reads.Unlock()
	if d.dead.Load() {
		return 0, os.ErrDeadlineExceeded
	}
	return d.f.Read(b[:min(len(b), d.chunks)])
}

// die ends the reader and waits for the read under way to return what
// it read, which is lost: half a frame, most likely.
func (d *dying) die() {
	d.dead.Store(true)
	d.f.SetReadDeadline(time.Now())
	d.reads.Lock()
	d.reads.Unlock()
	d.f.SetReadDeadline(time.Time{})
}

// TestResync: a client dies mid-read; a new one says hello on the same
// channel, finds its reply among the dead one's frames, adopts the
// processes, running or ended meanwhile, and drives them on.
func TestResync(t *testing.T) {
	s := startServer(t)
	d := &dying{f: s.out, chunks: 7}
	// A small window: what the server has in flight when the client dies
	// fits in the pipe, so the server is not blocked writing, and the
	// quitter's exit goes into the pipe to be lost with the rest.
	old := New(d, s.in, Limits{Window: 4096})
	if _, err := old.Hello(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t)
	producer, err := old.Start(ctx, Spec{Args: []string{"yes", "tick"}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	quitter, err := old.Start(ctx, Spec{Args: []string{"sh", "-c", "sleep 0.3; exit 7"}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, producer.Stdout(), 100<<10+3); err != nil {
		t.Fatal(err)
	}
	d.die()
	old.Close()
	time.Sleep(500 * time.Millisecond) // the quitter ends with no client

	c := New(s.out, s.in, Limits{})
	procs, err := c.Hello(ctxFor(t))
	if err != nil {
		t.Fatalf("hello after a client died: %v", err)
	}
	if len(procs) != 2 || procs[0].ID() != producer.ID() || procs[1].ID() != quitter.ID() {
		t.Fatalf("the new client adopted %d processes, want the 2 the old one started", len(procs))
	}
	p, q := procs[0], procs[1]
	if p.PID() != producer.PID() || p.Info().Exited {
		t.Errorf("yes adopted as %+v, want PID %d running", p.Info(), producer.PID())
	}
	// Output flows again, in whole lines once the first is past.
	var got bytes.Buffer
	if _, err := io.CopyN(&got, p.Stdout(), 1<<20); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(got.String(), "\n")
	for _, l := range lines[1 : len(lines)-1] {
		if l != "tick" {
			t.Fatalf("after the resync yes's output has %q", l)
		}
	}
	if x, err := q.Wait(ctx); err != nil || x != (Exit{Code: 7}) {
		t.Errorf("the process that ended without a client: %+v %v, want exit 7", x, err)
	}
	if err := q.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// A new process takes an id after the adopted ones.
	r := run(t, c, Spec{Args: []string{"echo", "after"}, Env: env}, nil)
	if r.stdout != "after\n" {
		t.Errorf("a process after the resync wrote %q", r.stdout)
	}
	if err := p.Signal(9, false); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, p.Stdout())
	if x, err := p.Wait(ctx); err != nil || x.Signal != 9 {
		t.Errorf("yes ended %+v %v", x, err)
	}
	if err := c.Err(); err != nil {
		t.Errorf("the channel broke: %v", err)
	}
}

// TestOutputBeforeExit: what a process wrote before it ended comes
// before its exit: once Wait returns, the client holds all of it.
func TestOutputBeforeExit(t *testing.T) {
	s := startServer(t)
	c := dial(t, s, Limits{})
	ctx := ctxFor(t)
	for i := range 20 {
		p, err := c.Start(ctx, Spec{Args: []string{"sh", "-c", "echo hello; echo err >&2"}, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if out, errs := unread(p, Stdout), unread(p, Stderr); out != 6 || errs != 4 {
			t.Fatalf("run %d: at its exit the client held %d and %d bytes of its output, want 6 and 4", i, out, errs)
		}
		collect(t, p, nil)
	}
}
