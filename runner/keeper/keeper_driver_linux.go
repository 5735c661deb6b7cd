package keeper

// A session's interpreter as a process of its process server, its wire
// relayed by the keeper.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/boxer-dev/boxer/procwire"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/containerd/log"
	"golang.org/x/sys/unix"
)

// On gVisor a checkpoint keeps only the first program's processes, so an
// interpreted session's interpreter (the driver) cannot be a containerd
// exec there. With a process server it is one of the server's processes,
// started by the keeper, and the keeper is the driver's end of the wire:
// a caller connects to the keeper's socket (DialWire) and speaks the
// wire's frames as on its FIFOs; the keeper passes whole frames each way
// and nothing else. The driver's output waits in the server, not read,
// while no caller is connected. Its stderr is read and dropped (on the
// FIFOs it was the stdin's FIFO, never written either).
const (
	// driverNote, in the keeper's procs directory, is the driver's
	// process: the next keeper takes it over as the driver.
	driverNote = "driver.json"
	// DriverEnded is left in a session's run directory by the keeper
	// whose driver ended: the session is over (its interpreter exited),
	// and its sandbox is killed.
	DriverEnded = "driver-ended"
	// wireUpgrade is the protocol a caller's connection to the keeper
	// switches to.
	wireUpgrade = "boxer-wire"
	// wireBroken is what a caller reads when the driver broke the wire:
	// not a frame, so it says ErrWireBroken.
	wireBroken = "broken\n"
)

// driverRelay is the keeper's end of the wire of a driver it started or
// took over.
type driverRelay struct {
	k  *keeper
	sp *procwire.Process
	// inMu orders whole frames into its stdin.
	inMu sync.Mutex

	mu   sync.Mutex
	cond *sync.Cond
	// conn is the connected caller's, nil between two.
	conn net.Conn
	// broken: the driver wrote what is not a frame; ended: it ended, or
	// the channel did.
	broken, ended bool
}

type driverID struct {
	ID  int `json:"id"`
	PID int `json:"pid"`
}

// startDriver starts the session's interpreter, args, through the
// process server, unless a dead keeper's runs (adopted: k.driver is set).
func (k *keeper) startDriver(args []string) error {
	if k.driver != nil {
		return nil
	}
	spec := procwire.Spec{Args: WithSecretEnv(args, k.secretEnv, k.spec.Process.Env), Env: k.spec.Process.Env, Cwd: k.spec.Process.Cwd, Stdin: true}
	ctx, cancel := context.WithTimeout(k.ctx, pidWait)
	sp, err := k.server.Start(ctx, spec)
	cancel()
	if err != nil {
		return fmt.Errorf("starting the session's interpreter: %w", err)
	}
	b, _ := json.Marshal(driverID{ID: int(sp.ID()), PID: sp.PID()})
	if err := reaper.WriteFileAtomic(filepath.Join(k.runDir, keeperFIFOs, driverNote), b, 0o600); err != nil {
		_ = sp.Signal(unix.SIGKILL, true)
		return fmt.Errorf("starting the session's interpreter: %w", err)
	}
	k.relay(sp)
	return nil
}

// isDriver says whether sp, held by the server when this keeper said
// hello, is the driver a dead keeper started.
func (k *keeper) isDriver(sp *procwire.Process) bool {
	b, err := os.ReadFile(filepath.Join(k.runDir, keeperFIFOs, driverNote))
	var d driverID
	return err == nil && len(b) < 1024 && json.Unmarshal(b, &d) == nil && d.ID == int(sp.ID()) && d.PID == sp.PID()
}

// relay makes sp the driver and follows it to its end.
func (k *keeper) relay(sp *procwire.Process) {
	d := &driverRelay{k: k, sp: sp}
	d.cond = sync.NewCond(&d.mu)
	k.driver = d
	go func() { _, _ = io.Copy(io.Discard, sp.Stderr()) }()
	go d.pumpOut()
	go func() {
		_, err := sp.Wait(k.ctx)
		if err == nil {
			// Its interpreter is gone: the session is over. Said
			// before the sandbox ends, so that a caller that finds it
			// ended knows why.
			log.G(k.ctx).Warnf("session %s: its interpreter exited: ending the session", k.id)
			_ = reaper.WriteFileAtomic(filepath.Join(k.runDir, DriverEnded), nil, 0o600)
			if kerr := k.task.Kill(context.WithoutCancel(k.ctx), unix.SIGKILL); kerr != nil {
				log.G(k.ctx).WithError(kerr).Warnf("session %s: ending its sandbox", k.id)
			}
			_ = sp.Release(context.WithoutCancel(k.ctx))
		}
		d.mu.Lock()
		d.ended = true
		d.dropLocked(nil)
		d.cond.Broadcast()
		d.mu.Unlock()
	}()
}

// pumpOut passes the driver's frames to the connected caller, whole, one
// at a time; a frame whose caller goes while it is written is dropped
// (a caller skips frames not of its call: the dead one's were).
func (d *driverRelay) pumpOut() {
	r := bufio.NewReaderSize(d.sp.Stdout(), 64<<10)
	for {
		f, err := readFrame(r, wireMaxOut)
		d.mu.Lock()
		if err != nil {
			// Its end (io.EOF) is left to its exit, which says why
			// before the caller is let go.
			if errors.Is(err, ErrWireBroken) {
				d.broken = true
				if d.conn != nil {
					_, _ = io.WriteString(d.conn, wireBroken)
				}
				d.dropLocked(nil)
			}
			d.mu.Unlock()
			return
		}
		for d.conn == nil && !d.ended {
			d.cond.Wait()
		}
		c := d.conn
		d.mu.Unlock()
		if c == nil {
			return
		}
		if _, err := c.Write(f.encode()); err != nil {
			d.mu.Lock()
			d.dropLocked(c)
			d.mu.Unlock()
		}
	}
}

// dropLocked closes the connected caller's connection, if it is c (any,
// when c is nil).
func (d *driverRelay) dropLocked(c net.Conn) {
	if d.conn != nil && (c == nil || d.conn == c) {
		d.conn.Close()
		d.conn = nil
	}
}

// serve is the driver's end of the wire for caller c until c goes or
// another caller connects: whole frames from c go into the driver's
// stdin, and its frames out to c.
func (d *driverRelay) serve(c net.Conn, r *bufio.Reader) {
	d.mu.Lock()
	switch {
	case d.broken:
		_, _ = io.WriteString(c, wireBroken)
		fallthrough
	case d.ended:
		d.mu.Unlock()
		c.Close()
		return
	}
	d.dropLocked(nil)
	d.conn = c
	d.cond.Broadcast()
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.dropLocked(c)
		d.mu.Unlock()
	}()
	stdin := d.sp.Stdin()
	for {
		f, err := readFrame(r, wireMaxIn)
		if err != nil {
			return
		}
		d.inMu.Lock()
		_, err = stdin.Write(f.encode())
		d.inMu.Unlock()
		if err != nil {
			return
		}
	}
}

// serveWire switches a caller's request to the wire (DialWire).
func (k *keeper) serveWire(w http.ResponseWriter, r *http.Request) {
	if k.driver == nil || r.Header.Get("Upgrade") != wireUpgrade {
		// (DialWire: ErrWireGone.)
		http.Error(w, "the session has no interpreter here", http.StatusNotFound)
		return
	}
	c, br, err := upgrade(w)
	if err != nil {
		return
	}
	go k.driver.serve(c, br)
}

// interruptDriver sends the driver SIGINT: its call's code is
// interrupted (InterruptDriver).
func (k *keeper) interruptDriver(w http.ResponseWriter, r *http.Request) {
	if k.driver == nil {
		http.Error(w, "the session has no interpreter here", http.StatusNotFound)
		return
	}
	if err := k.driver.sp.Signal(unix.SIGINT, false); err != nil {
		keeperError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// InterruptDriver interrupts the call under way in the session in runDir,
// whose keeper relays its interpreter's wire (DialWire).
func (r *Layer) InterruptDriver(ctx context.Context, runDir string) error {
	kc := NewClient(filepath.Join(runDir, Sock))
	defer kc.HTTP.CloseIdleConnections()
	return kc.Call(ctx, "POST", "/wire/interrupt", nil, nil, nil)
}

// upgrade switches a caller's connection to the wire's frames, and
// returns it with what it has sent so far.
func upgrade(w http.ResponseWriter) (net.Conn, *bufio.Reader, error) {
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		keeperError(w, err)
		return nil, nil, err
	}
	resp := &http.Response{StatusCode: http.StatusSwitchingProtocols, ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{"Connection": {"Upgrade"}, "Upgrade": {wireUpgrade}}}
	if err := resp.Write(brw); err != nil {
		c.Close()
		return nil, nil, err
	}
	if err := brw.Flush(); err != nil {
		c.Close()
		return nil, nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, brw.Reader, nil
}

// DialWire connects to the wire of session id, in runDir, whose keeper
// relays it (its record's Driver), starting the keeper when none
// answers.
func (r *Layer) DialWire(ctx context.Context, runDir, id string) (*Wire, error) {
	return r.dialKeeper(ctx, runDir, id, "/wire", nil)
}

// dialKeeper asks session id's keeper for path, with body, and returns
// the connection switched to the wire's frames; ErrWireGone when there is
// no wire there.
func (r *Layer) dialKeeper(ctx context.Context, runDir, id, path string, body []byte) (*Wire, error) {
	if _, err := r.keeperAt(ctx, runDir, id); err != nil {
		return nil, err
	}
	var dialer net.Dialer
	c, err := dialer.DialContext(ctx, "unix", filepath.Join(runDir, Sock))
	if err != nil {
		return nil, fmt.Errorf("reaching the session's keeper: %w", err)
	}
	req, _ := http.NewRequest("POST", "http://keeper"+path, bytes.NewReader(body))
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", wireUpgrade)
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	} else {
		_ = c.SetDeadline(time.Now().Add(StartWait))
	}
	br := bufio.NewReaderSize(c, 64<<10)
	err = req.Write(c)
	var resp *http.Response
	if err == nil {
		resp, err = http.ReadResponse(br, req)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("reaching the session's keeper: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		c.Close()
		if resp.StatusCode == http.StatusNotFound {
			return nil, ErrWireGone
		}
		return nil, fmt.Errorf("reaching the session's keeper: it answered %s", resp.Status)
	}
	_ = c.SetDeadline(time.Time{})
	return &Wire{in: c.(*net.UnixConn), r: br}, nil
}
