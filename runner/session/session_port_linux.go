package session

// A session's ports: connections made inside its own network, never the host's.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/runner/keeper"
	box "github.com/boxer-dev/boxer/runner/sandbox"
)

// makeLoopback gives a gVisor session a network namespace of its own with
// lo up, for its netstack (runsc --network=sandbox, see
// runscNetstackFlags): runsc forwards a port only to a netstack, and a
// netstack in a fresh namespace would have no loopback at all. A run, and
// a session on runc, gets the fresh namespace its runtime makes.
func (sb *sandbox) makeLoopback() error {
	if sb.session == nil || sb.Req.Runtime != "runsc" {
		return nil
	}
	path := filepath.Join(sb.RunDir, "netns")
	if err := egress.MakeLoopbackNetns(path); err != nil {
		return fmt.Errorf("making the session's network namespace: %w", err)
	}
	sb.Dirs.Netns = path
	return nil
}

// DialPort connects to TCP port on the loopback of session id of caller
// ("" for any), as a program inside it would: on runc from a socket made
// in the session's network namespace, on runsc through gVisor's own port
// forwarding into its netstack. A port of the host's is never reached:
// the connection is never made in the host's network.
func (r *Layer) DialPort(ctx context.Context, id, caller string, port int) (net.Conn, error) {
	if port < 1 || port > 65535 {
		return nil, contract.FieldErr(contract.FieldPort, "must be a TCP port from 1 to 65535, not %d", port)
	}
	s, err := r.loadSession(ctx, id, caller, false)
	if err != nil {
		return nil, err
	}
	if s.rec.Request.Runtime == "runsc" {
		return r.dialRunsc(ctx, s, port)
	}
	// Its task's namespace: the runtime's, or its link's with egress.
	task, err := s.loadTask(ctx)
	if err != nil {
		return nil, err
	}
	ns := "/proc/" + strconv.Itoa(int(task.Pid())) + "/ns/net"
	c, err := egress.DialIn(ctx, ns, "tcp", "127.0.0.1:"+strconv.Itoa(port))
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return nil, &contract.PortError{ID: id, Port: port, Reason: errno.Error()}
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to port %d in session %s: %w", port, id, err)
	}
	return c, nil
}

// dialRunsc has runsc connect to port in session s's netstack and hand
// the connection over on a unix socket in its run directory (runsc
// port-forward --stream). runsc connects to the socket, passes its end to
// the sandbox, which connects to the port on its loopback and copies
// between the two, and exits: 0 once the sandbox has connected, else
// non-zero saying why (as measured with gVisor of 2026-09-05).
func (r *Layer) dialRunsc(ctx context.Context, s *liveSession, port int) (net.Conn, error) {
	bin, err := box.RunscBinary()
	if err != nil {
		return nil, err
	}
	wrapper, err := r.RunscWrapper(bin, true)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	sock := filepath.Join(s.runDir, "port-"+hex.EncodeToString(b)+".sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("forwarding port %d: %w", port, err)
	}
	// Closing it removes its file: once runsc has connected, or failed.
	defer ln.Close()
	cmd := exec.Command(wrapper, "--root", filepath.Join(reaper.RuncRoot, r.Namespace), "port-forward", "--stream", sock, s.id, strconv.Itoa(port))
	stderr := &tailBuffer{max: 4 << 10}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("forwarding port %d: starting runsc: %w", port, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	accepted := make(chan *net.UnixConn, 1)
	go func() {
		c, _ := ln.AcceptUnix()
		accepted <- c
	}()
	select {
	case err = <-exited:
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(keeper.StartWait):
		err = errors.New("runsc did not connect in 10s")
	}
	if err == nil {
		// runsc connected before it exited 0: its end is in the backlog.
		select {
		case c := <-accepted:
			if c != nil {
				return c, nil
			}
		case <-time.After(time.Second):
		}
	}
	// What was accepted, or nil once the listener is closed.
	ln.Close()
	c := <-accepted
	if c != nil {
		c.Close()
	}
	if err == nil {
		return nil, fmt.Errorf("forwarding port %d in session %s: runsc ended without connecting", port, s.id)
	}
	_ = cmd.Process.Kill()
	if reason := stderr.reason(); reason != "" {
		if strings.Contains(reason, "connection refused") {
			return nil, &contract.PortError{ID: s.id, Port: port, Reason: "connection refused"}
		}
		err = fmt.Errorf("runsc: %s", reason)
	}
	return nil, fmt.Errorf("forwarding port %d in session %s: %w", port, s.id, err)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - t.max; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

// reason is the last thing runsc said, without its prefixes.
func (t *tailBuffer) reason() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(t.b.String()), "\n")
	last := lines[len(lines)-1]
	if i := strings.LastIndex(last, ": "); i >= 0 && strings.Contains(last, "connection") {
		return last[i+2:]
	}
	return last
}

// CheckSession says whether session id of caller ("" for any) is there to
// be used now: nil, or why not (as DialPort would).
func (r *Layer) CheckSession(ctx context.Context, id, caller string) error {
	_, err := r.loadSession(ctx, id, caller, false)
	return err
}
