package keeper

// A session's processes, from its clients: the keeper's other end.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/runner/contract"
	"golang.org/x/sys/unix"
)

// StartWait is how long a command waits for a keeper it started to
// answer.
const StartWait = 10 * time.Second

// keeperRival is how long a command whose keeper exited at once waits
// for the one that holds the session to answer.
const keeperRival = 3 * time.Second

// keeperFor returns a client of session id's keeper, starting the keeper
// when none answers. The caller must own the session.
func (r *Layer) keeperFor(ctx context.Context, id, caller string) (*Client, error) {
	runDir, err := r.sessions.RunDir(ctx, id, caller)
	if err != nil {
		return nil, err
	}
	kc, err := r.keeperAt(ctx, runDir, id)
	if errors.Is(err, errKeeperExited) {
		if lerr := r.endedMeanwhile(ctx, id, caller); lerr != nil {
			return nil, lerr
		}
	}
	return kc, err
}

// endedMeanwhile is the error that says session id has ended, if it is
// seen ended within keeperRival; else nil. A keeper that exited, or went
// between its lookup and a request, is mostly a session that is ending:
// its keeper exits with its sandbox's first program, and the session is
// seen ended a moment after. Its end says why better.
func (r *Layer) endedMeanwhile(ctx context.Context, id, caller string) error {
	for deadline := time.Now().Add(keeperRival); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err := r.sessions.RunDir(ctx, id, caller); err != nil {
			return err
		}
	}
	return nil
}

// errKeeperExited: a keeper started for a session exited, and none holds
// it.
var errKeeperExited = errors.New("the session's keeper exited")

// keeperAt is keeperFor of session id in runDir, whose caller owns it.
func (r *Layer) keeperAt(ctx context.Context, runDir, id string) (*Client, error) {
	kc := NewClient(filepath.Join(runDir, Sock))
	if Serving(runDir) {
		return kc, nil
	}
	exited, err := r.SpawnKeeper(runDir, id, Handoff{})
	if err != nil {
		return nil, err
	}
	deadline := time.After(StartWait)
	var gone <-chan time.Time
	for !kc.Alive(ctx) {
		select {
		case <-exited:
			// Another keeper may have won the lock (the one started
			// with the session, still starting): it answers soon. With
			// no keeper holding the lock, this one failed.
			if !keeperLocked(runDir) && !kc.Alive(ctx) {
				return nil, keeperExited(runDir)
			}
			exited, gone = nil, time.After(keeperRival)
		case <-gone:
			return nil, keeperExited(runDir)
		case <-deadline:
			return nil, errors.New("the session's keeper did not answer in 10s")
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return kc, nil
}

// SpawnKeeper starts session id's keeper, detached, and does not wait
// for it: exited is closed when the process ends (at once, if another
// keeper holds the session). h is what the session's maker hands it (see
// Handoff); a keeper started again gets nothing. Its environment
// is this process's without the secrets' values (keeperEnv).
func (r *Layer) SpawnKeeper(runDir, id string, h Handoff) (exited chan struct{}, err error) {
	defer h.close()
	if len(r.keeper) == 0 {
		return nil, errors.New("this boxer cannot start a session's keeper (no keeper command): use the boxer binary")
	}
	logf, err := os.OpenFile(filepath.Join(runDir, keeperLog), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("starting the session's keeper: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(r.keeper[0], append(append([]string{}, r.keeper[1:]...), "keeper", id)...)
	// Its own session: the caller's terminal and process group are not its.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = r.keeperEnv()
	// Files 3, 4, 5: the session's gateway, to serve (see
	// session_net_linux.go); then the lock, then the secrets' pipe.
	hand := func(f *os.File, env string) {
		cmd.ExtraFiles = append(cmd.ExtraFiles, f)
		cmd.Env = append(cmd.Env, env+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
	}
	if len(h.gateway) > 0 {
		cmd.ExtraFiles = append(cmd.ExtraFiles, h.gateway...)
		cmd.Env = append(cmd.Env, keeperGatewayEnv+"=3")
	}
	if h.lock != nil {
		hand(h.lock, keeperLockEnv)
	}
	var secretsW *os.File
	if h.Secrets != nil {
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("starting the session's keeper: %w", err)
		}
		defer pr.Close()
		secretsW = pw
		hand(pr, keeperSecretsEnv)
	}
	if err := cmd.Start(); err != nil {
		if secretsW != nil {
			secretsW.Close()
		}
		return nil, fmt.Errorf("starting the session's keeper: %w", err)
	}
	exited = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	if secretsW != nil {
		if err := handSecrets(secretsW, h.Secrets); err != nil {
			_ = cmd.Process.Kill()
			return nil, err
		}
	}
	return exited, nil
}

// keeperLocked says whether a keeper holds session runDir's keeper lock.
func keeperLocked(runDir string) bool {
	f, err := os.Open(filepath.Join(runDir, keeperLock))
	if err != nil {
		return false
	}
	defer f.Close()
	return unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB) != nil
}

// keeperExited is errKeeperExited with the last line its log has.
func keeperExited(runDir string) error {
	if line := lastLine(filepath.Join(runDir, keeperLog)); line != "" {
		return fmt.Errorf("%w: %s", errKeeperExited, line)
	}
	return fmt.Errorf("%w, saying nothing", errKeeperExited)
}

func lastLine(file string) string {
	data, _ := os.ReadFile(file)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return lines[len(lines)-1]
}

// StartProcess starts a command in session id of caller ("" for any) and
// returns it once it runs; AttachProcess follows its output. Past the
// caller's ceiling on processes it is refused with a LimitError.
func (r *Layer) StartProcess(ctx context.Context, id, caller string, req contract.ProcessRequest) (contract.ProcessInfo, error) {
	if err := req.Check(); err != nil {
		return contract.ProcessInfo{}, err
	}
	var info contract.ProcessInfo
	err := r.toKeeper(ctx, id, caller, func(kc *Client) error {
		// Counted until its keeper counts it.
		release, err := r.sessions.HoldProcess(ctx, caller, true)
		if err != nil {
			return err
		}
		defer release()
		return kc.Call(ctx, "POST", "/processes", nil, jsonBody(req), &info)
	})
	return info, err
}

// Processes lists session id's processes, running and ended.
func (r *Layer) Processes(ctx context.Context, id, caller string) ([]contract.ProcessInfo, error) {
	var out []contract.ProcessInfo
	err := r.toKeeper(ctx, id, caller, func(kc *Client) error {
		return kc.Call(ctx, "GET", "/processes", nil, nil, &out)
	})
	return out, err
}

// SignalProcess sends sig to process ref (its number or tag) of session
// id, and to what it started for SIGKILL.
func (r *Layer) SignalProcess(ctx context.Context, id, caller, ref string, sig syscall.Signal) error {
	return r.toKeeper(ctx, id, caller, func(kc *Client) error {
		return kc.Call(ctx, "POST", "/processes/"+url.PathEscape(ref)+"/signal", url.Values{"signal": {strconv.Itoa(int(sig))}}, nil, nil)
	})
}

// SendStdin writes in to process ref's stdin, and closes it after if
// close.
func (r *Layer) SendStdin(ctx context.Context, id, caller, ref string, in io.Reader, close bool) error {
	q := url.Values{}
	if close {
		q.Set("close", "1")
	}
	return r.toKeeper(ctx, id, caller, func(kc *Client) error {
		return kc.Call(ctx, "POST", "/processes/"+url.PathEscape(ref)+"/stdin", q, in, nil)
	})
}

// ResizeProcess changes the size of process ref's terminal.
func (r *Layer) ResizeProcess(ctx context.Context, id, caller, ref string, size contract.TermSize) error {
	return r.toKeeper(ctx, id, caller, func(kc *Client) error {
		return kc.Call(ctx, "POST", "/processes/"+url.PathEscape(ref)+"/resize", nil, jsonBody(size), nil)
	})
}

// AttachProcess follows process ref's output from offset from (0: all
// that its ring still holds), calling fn with each event until the
// process's end (the last event has End) or ctx's. A caller's stream
// of it is held by its adapter (HoldStream), from before the process
// starts for a stream that starts it.
func (r *Layer) AttachProcess(ctx context.Context, id, caller, ref string, from int64, fn func(contract.ProcessEvent) error) error {
	return r.toKeeper(ctx, id, caller, func(kc *Client) error {
		resp, err := kc.do(ctx, "GET", "/processes/"+url.PathEscape(ref)+"/output", url.Values{"from": {strconv.FormatInt(from, 10)}}, nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		return events(ctx, resp.Body, fn)
	})
}

// RunProcess is StartProcess and AttachProcess of the process started,
// in one request to the session's keeper: fn's first event has Start,
// once the process runs.
func (r *Layer) RunProcess(ctx context.Context, id, caller string, req contract.ProcessRequest, fn func(contract.ProcessEvent) error) error {
	if err := req.Check(); err != nil {
		return err
	}
	return r.toKeeper(ctx, id, caller, func(kc *Client) error {
		// Counted until its keeper counts it: it has when it answers.
		release, err := r.sessions.HoldProcess(ctx, caller, true)
		if err != nil {
			return err
		}
		resp, err := kc.do(ctx, "POST", "/processes", url.Values{"follow": {"1"}}, jsonBody(req))
		release()
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		return events(ctx, resp.Body, fn)
	})
}

// events calls fn with each event of a keeper's stream of a process
// until its end (the last event has End).
func events(ctx context.Context, body io.Reader, fn func(contract.ProcessEvent) error) error {
	dec := json.NewDecoder(bufio.NewReader(body))
	for {
		var ev contract.ProcessEvent
		if err := dec.Decode(&ev); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("following the process: the session ended or its keeper stopped (%v)", err)
		}
		if err := fn(ev); err != nil {
			return err
		}
		if ev.End != nil {
			return nil
		}
	}
}

// toKeeper runs f with session id's keeper. Should the keeper be gone
// when f reaches for it, and the session end meanwhile, the session's
// end is the error.
func (r *Layer) toKeeper(ctx context.Context, id, caller string, f func(*Client) error) error {
	kc, err := r.keeperFor(ctx, id, caller)
	if err != nil {
		return err
	}
	err = f(kc)
	if errors.Is(err, errKeeperUnreachable) {
		if lerr := r.endedMeanwhile(ctx, id, caller); lerr != nil {
			return lerr
		}
	}
	return err
}

// errKeeperUnreachable: a request found no keeper on the session's
// socket.
var errKeeperUnreachable = errors.New("reaching the session's keeper")

// Client speaks to one keeper.
type Client struct {
	// HTTP speaks to it on its socket.
	HTTP *http.Client
}

// NewClient returns a client of the keeper listening on sock.
func NewClient(sock string) *Client {
	return &Client{HTTP: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		DisableCompression: true,
	}}}
}

// Serving says whether a keeper listens in session run directory
// runDir: its socket takes a connection (a keeper that holds it but
// does not answer fails the request that follows, as one that went).
func Serving(runDir string) bool {
	c, err := net.DialTimeout("unix", filepath.Join(runDir, Sock), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Alive says whether a keeper answers.
func (kc *Client) Alive(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var out []contract.ProcessInfo
	return kc.Call(ctx, "GET", "/processes", nil, nil, &out) == nil
}

func (kc *Client) do(ctx context.Context, method, path string, q url.Values, body io.Reader) (*http.Response, error) {
	u := "http://keeper" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	resp, err := kc.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errKeeperUnreachable, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		var f keeperFault
		if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&f); err != nil {
			return nil, fmt.Errorf("the session's keeper answered %s", resp.Status)
		}
		switch {
		case f.NotFound:
			return nil, contract.ErrProcessNotFound
		case f.NoNetwork:
			return nil, contract.ErrNoNetwork
		case f.Field != "":
			return nil, &contract.FieldError{Field: f.Field, Message: f.Error, Forbidden: f.Forbidden}
		}
		return nil, errors.New(f.Error)
	}
	return resp, nil
}

// Call asks the keeper method path, with q and body, and decodes its
// answer into out (nil: none is read).
func (kc *Client) Call(ctx context.Context, method, path string, q url.Values, body io.Reader, out any) error {
	resp, err := kc.do(ctx, method, path, q, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func jsonBody(v any) io.Reader {
	data, _ := json.Marshal(v)
	return strings.NewReader(string(data))
}
