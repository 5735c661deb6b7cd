package keeper

// A session call's program through the process server, in the wire's
// frames.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/boxer-dev/boxer/procwire"
	"github.com/containerd/log"
	"golang.org/x/sys/unix"
)

// A call of a session without an interpreter (bash, javascript,
// typescript) runs a program of its own. With a process server, the
// caller connects to the keeper (DialCall) with the call's number and
// argv, and the keeper starts it through the server and speaks the wire's
// frames (session_wire_linux.go) for it: "out", "err" and, at its end,
// "exit" to the caller; "in" and "eof" from it. At the call's timeout the
// caller asks for SIGKILL to its process group apart (KillCall): its
// input may wait on a program that does not read it. Its output is the caller's, not
// a ring's: read only as the caller takes it, so that the call's output
// limit keeps its first bytes, as a containerd exec's streams did. A
// caller that goes kills the program.
const (
	callPath = "/call"
	// callArgsMax bounds a call's argv, as a process start's.
	callArgsMax = 256 << 10
	// callChunk is the most output one frame carries.
	callChunk = 64 << 10
)

// serveCall runs one call's program for a caller whose connection
// switches to the wire's frames.
func (k *keeper) serveCall(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.URL.Query().Get("call"))
	var args []string
	if err == nil {
		err = json.NewDecoder(io.LimitReader(r.Body, callArgsMax)).Decode(&args)
	}
	switch {
	case k.server == nil || r.Header.Get("Upgrade") != wireUpgrade:
		http.Error(w, "the session has no process server", http.StatusNotFound)
		return
	case err != nil || len(args) == 0:
		http.Error(w, "a call needs its number and argv", http.StatusBadRequest)
		return
	}
	c, br, err := upgrade(w)
	if err != nil {
		return
	}
	defer c.Close()
	cw := &frameWriter{c: c}
	spec := procwire.Spec{Args: WithSecretEnv(args, k.secretEnv, k.spec.Process.Env), Env: k.spec.Process.Env, Cwd: k.spec.Process.Cwd, Stdin: true}
	k.startMu.Lock()
	ctx, cancel := context.WithTimeout(k.ctx, pidWait)
	sp, err := k.server.Start(ctx, spec)
	cancel()
	k.startMu.Unlock()
	var se *procwire.StartError
	if errors.As(err, &se) && strings.HasPrefix(se.Message, "exec: ") {
		// As boxer-init's exec reports it: 127 not found, else 126.
		code := 126
		if se.Errno == uint32(unix.ENOENT) {
			code = 127
		}
		_ = cw.send("err", n, []byte("boxer-procd: "+se.Message+"\n"))
		_ = cw.send("exit", n, []byte(strconv.Itoa(code)))
		return
	} else if err != nil {
		log.G(k.ctx).WithError(err).Warnf("session %s: starting call %d", k.id, n)
		return // the caller reads the end of the wire: no status
	}
	k.mu.Lock()
	if k.calls == nil {
		k.calls = map[int]*procwire.Process{}
	}
	k.calls[n] = sp
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		if k.calls[n] == sp {
			delete(k.calls, n)
		}
		k.mu.Unlock()
	}()
	go k.callInput(sp, br)
	var wg sync.WaitGroup
	for kind, out := range map[string]io.Reader{"out": sp.Stdout(), "err": sp.Stderr()} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, callChunk)
			for {
				m, err := out.Read(buf)
				if m > 0 && cw.send(kind, n, buf[:m]) != nil {
					// The caller went: the program goes too.
					_ = sp.Signal(unix.SIGKILL, true)
					_, _ = io.Copy(io.Discard, out)
					return
				}
				if err != nil {
					return
				}
			}
		}()
	}
	x, err := sp.Wait(k.ctx)
	wg.Wait()
	if err != nil {
		return // the channel ended: no status
	}
	_ = sp.Release(context.WithoutCancel(k.ctx))
	_ = cw.send("exit", n, []byte(strconv.Itoa(x.Status())))
}

// callInput passes the caller's frames to the call's program until the
// caller goes, which kills it.
func (k *keeper) callInput(sp *procwire.Process, r *bufio.Reader) {
	stdin := sp.Stdin()
	for {
		f, err := readFrame(r, wireMaxIn)
		if err != nil {
			_ = sp.Signal(unix.SIGKILL, true)
			return
		}
		switch f.Kind {
		case "in":
			if _, err := stdin.Write(f.Data); err != nil && !errors.Is(err, procwire.ErrEnded) {
				log.G(k.ctx).WithError(err).Debugf("session %s: a call's stdin", k.id)
			}
		case "eof":
			_ = stdin.Close()
		}
	}
}

// frameWriter writes whole frames to a caller's connection, one at a
// time.
type frameWriter struct {
	mu sync.Mutex
	c  net.Conn
}

func (w *frameWriter) send(kind string, call int, data []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.c.Write(Frame{Kind: kind, Call: call, Data: data}.encode())
	return err
}

// killCall kills call n's program and its process group.
func (k *keeper) killCall(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.Atoi(r.PathValue("n"))
	k.mu.Lock()
	sp := k.calls[n]
	k.mu.Unlock()
	if sp != nil {
		_ = sp.Signal(unix.SIGKILL, true)
	}
	w.WriteHeader(http.StatusNoContent)
}

// KillCall kills call n's program in session id (in runDir), whose
// keeper started it (DialCall).
func (r *Layer) KillCall(ctx context.Context, runDir string, n int) error {
	kc := NewClient(filepath.Join(runDir, Sock))
	defer kc.HTTP.CloseIdleConnections()
	return kc.Call(ctx, "POST", callPath+"/"+strconv.Itoa(n)+"/kill", nil, nil, nil)
}

// DialCall starts call n's program, args, in session id (in runDir)
// through its keeper and process server, and returns the call's wire.
func (r *Layer) DialCall(ctx context.Context, runDir, id string, n int, args []string) (*Wire, error) {
	body, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return r.dialKeeper(ctx, runDir, id, callPath+"?call="+strconv.Itoa(n), body)
}
