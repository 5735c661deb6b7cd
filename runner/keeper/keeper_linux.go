package keeper

// A session's keeper: the host process that holds its processes.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/procwire"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/secrets"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
	"github.com/containerd/log"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// A session's processes outlive the boxer command that starts them (a
// background dev server, a watcher), and their output must wait for a
// later attach. Something on the host must read it meanwhile: the
// session's keeper, `boxer keeper ID`, a detached process started when the
// session is made (Options.Keeper; again by the next command that needs it,
// should it die) that lives as long as the session's sandbox, as the
// standby maker lives for its standby. It also ends the session at its
// deadline or idle timeout, as any boxer process would, when none runs. It holds
// each process's streams, keeps the last DefaultRingBytes of its output,
// and answers the session's clients on a unix socket in the session's run
// directory, readable by root only. There is at most one per session: it
// holds keeperLock for its life, and a second one started meanwhile finds
// it held and exits. When the sandbox ends (removed, expired, its
// lifetime over), the keeper does too; if it dies first, its processes
// lose their output, and the next command starts a new keeper.

const (
	// Sock is the keeper's socket in its session's run directory.
	Sock       = "keeper.sock"
	keeperLock = "keeper.lock"
	keeperLog  = "keeper.log"
	// keeperFIFOs holds the FIFOs of the processes' streams.
	keeperFIFOs = "procs"
	// keeperTouch is how often a keeper with a running process marks its
	// session used: a session is not idle while something runs in it.
	keeperTouch = 20 * time.Second
	// keeperCheck is how often a keeper looks whether its session is over.
	keeperCheck = time.Second
)

// keeper serves one session's processes.
type keeper struct {
	r      *Layer
	id     string
	runDir string
	c      containerd.Container
	task   containerd.Task
	spec   *specs.Spec
	// ctx lives as long as the keeper: processes are not the requests'.
	ctx context.Context

	mu    sync.Mutex
	next  int
	procs map[int]*keptProcess
	// server is the session's process server's client; nil when the
	// session has none, and its processes are containerd execs.
	// startMu orders starts through it.
	server  *procwire.Client
	startMu sync.Mutex
	// driver relays the wire of the session's interpreter, when it is
	// one of the server's processes (keeper_driver_linux.go).
	driver *driverRelay
	// calls are the running programs of session calls (DialCall), by
	// call number; under mu.
	calls map[int]*procwire.Process

	// gw serves the session's network (session_net_linux.go); nil
	// without one, or when it failed to start (gwErr). netMu orders
	// changes of its allowlist.
	gw    *egress.Gateway
	gwErr error
	netMu sync.Mutex

	// masks are the session's secrets, masked in its processes' output
	// before it is kept; secretEnv, those they get as variables.
	masks     []secrets.Named
	secretEnv []string
	// runtime is the session's ("runc" or "runsc"): it says how a
	// process is signalled (keeper_signal_linux.go).
	runtime string
}

// Keep serves session id's processes until its sandbox ends or ctx does
// (the hidden `boxer keeper ID` command). It returns nil at once when
// another keeper holds the session.
func (r *Layer) Keep(ctx context.Context, id string) error {
	if !r.sessions.ValidID(id) {
		return contract.ErrSessionNotFound
	}
	runDir := filepath.Join(r.RunsDir, id)
	// Its secrets first: its maker writes them while it waits.
	held, herr := inheritedSecrets()
	// Locked already when its maker handed it the session.
	lock := inheritedKeeperLock()
	if lock == nil {
		var err error
		if lock, err = os.OpenFile(filepath.Join(runDir, keeperLock), os.O_CREATE|os.O_RDWR, 0o600); err != nil {
			return fmt.Errorf("session %s: %w", id, contract.ErrSessionNotFound)
		}
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return nil
	}
	if herr != nil {
		return fmt.Errorf("session %s: %w", id, herr)
	}
	rec, err := readSessionRecord(runDir)
	if err != nil {
		return fmt.Errorf("session %s: %w", id, contract.ErrSessionNotFound)
	}
	if held == nil {
		held = deliveredSecrets(runDir, rec)
	}
	c, err := r.Containerd.LoadContainer(ctx, id)
	if err != nil {
		return fmt.Errorf("loading session %s: %w", id, err)
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return fmt.Errorf("loading session %s: %w", id, err)
	}
	spec, err := c.Spec(ctx)
	if err != nil {
		return fmt.Errorf("loading session %s: %w", id, err)
	}
	ended, err := task.Wait(ctx)
	if err != nil {
		return fmt.Errorf("watching session %s: %w", id, err)
	}
	// Mkdir, not MkdirAll: a session removed while its keeper started has
	// no run directory, and its keeper must not make one again (it did,
	// once, under load: an empty run directory outlived its session).
	if err := os.Mkdir(filepath.Join(runDir, keeperFIFOs), 0o700); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("session %s: %w", id, contract.ErrSessionNotFound)
	} else if err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	sock := filepath.Join(runDir, Sock)
	_ = os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		return err
	}
	k := &keeper{r: r, id: id, runDir: runDir, c: c, task: task, spec: spec, ctx: ctx, procs: map[int]*keptProcess{}, masks: held.masks(), secretEnv: rec.SecretEnv, runtime: rec.Request.Runtime}
	if k.gw, k.gwErr = r.keeperGateway(runDir, held); k.gwErr != nil {
		log.G(ctx).WithError(k.gwErr).Warnf("session %s: serving its network", id)
	} else if k.gw != nil {
		defer k.gw.Close()
	}
	if rec.ProcServer {
		if err := k.connectServer(); err != nil {
			ln.Close()
			return fmt.Errorf("session %s: %w", id, err)
		}
	}
	if len(rec.Driver) > 0 && k.server != nil {
		if err := k.startDriver(rec.Driver); err != nil {
			// A session without its interpreter is over.
			_ = reaper.WriteFileAtomic(filepath.Join(runDir, DriverEnded), nil, 0o600)
			_ = task.Kill(context.WithoutCancel(ctx), unix.SIGKILL)
			ln.Close()
			return fmt.Errorf("session %s: %w", id, err)
		}
	}
	srv := &http.Server{Handler: k.routes(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	tick := time.NewTicker(keeperTouch)
	defer tick.Stop()
	check := time.NewTicker(keeperCheck)
	defer check.Stop()
	for {
		select {
		case <-ended:
			log.G(ctx).Debugf("session %s ended: its keeper exits", id)
			return nil
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if k.running() > 0 {
				_ = reaper.TouchSession(runDir, time.Now())
			}
		case <-check.C:
			if k.over() {
				return nil
			}
		}
	}
}

// over ends the session if it is past its deadline (its labels' verdict,
// as any boxer process takes it), and says whether it has ended: the
// keeper is what ends a session that lives on its own (a CLI's) at the
// end of its lifetime when no other boxer process runs, as its PID 1 did
// before the lifetime could move.
func (k *keeper) over() bool {
	info, err := k.c.Info(k.ctx, containerd.WithoutRefreshedMetadata)
	if errdefs.IsNotFound(err) {
		return true
	} else if err != nil {
		return false
	}
	if info.Labels[reaper.LabelOwner] != "" && !reaper.Orphan(info.Labels) {
		// Held (a server's, an MCP client's): its holder ends it, and
		// says so in its audit log. One whose holder is gone waits for
		// its heir as one nobody holds.
		return false
	}
	// Only its lifetime: an idle session is ended by the next boxer
	// command, which can then say why.
	deadline, err := strconv.ParseInt(info.Labels[reaper.LabelSessionDeadline], 10, 64)
	if err != nil || time.Now().Unix() < deadline {
		return false
	}
	reason, _ := k.r.sessions.Expire(k.ctx, k.c, info, false)
	return reason != ""
}

// running counts the processes that have not ended.
func (k *keeper) running() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, p := range k.procs {
		if p.info.Running {
			n++
		}
	}
	return n
}

// find returns the process ref names: its number, or its tag (the latest
// process with it).
func (k *keeper) find(ref string) (*keptProcess, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if n, err := strconv.Atoi(ref); err == nil {
		if p, ok := k.procs[n]; ok {
			return p, nil
		}
		return nil, contract.ErrProcessNotFound
	}
	var found *keptProcess
	for _, p := range k.procs {
		if p.info.Tag == ref && (found == nil || p.info.ID > found.info.ID) {
			found = p
		}
	}
	if found == nil {
		return nil, contract.ErrProcessNotFound
	}
	return found, nil
}

// list returns the processes, oldest first.
func (k *keeper) list() []contract.ProcessInfo {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]contract.ProcessInfo, 0, len(k.procs))
	for i := 1; i <= k.next; i++ {
		if p, ok := k.procs[i]; ok {
			out = append(out, p.info)
		}
	}
	return out
}

// routes is the keeper's API, spoken only with this package's client.
func (k *keeper) routes() http.Handler {
	mux := http.NewServeMux()
	k.netRoutes(mux)
	mux.HandleFunc("POST /output/save", func(w http.ResponseWriter, r *http.Request) {
		if err := k.saveOutputs(); err != nil {
			keeperError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /wire", k.serveWire)
	mux.HandleFunc("POST /wire/interrupt", k.interruptDriver)
	mux.HandleFunc("POST "+callPath, k.serveCall)
	mux.HandleFunc("POST "+callPath+"/{n}/kill", k.killCall)
	mux.HandleFunc("GET /masks", func(w http.ResponseWriter, r *http.Request) {
		writeKeeperJSON(w, k.masks)
	})
	mux.HandleFunc("POST /processes", func(w http.ResponseWriter, r *http.Request) {
		var req contract.ProcessRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			keeperError(w, contract.FieldErr(contract.FieldArgs, "bad request: %v", err))
			return
		}
		info, err := k.start(req)
		if err != nil {
			keeperError(w, err)
			return
		}
		if r.URL.Query().Get("follow") == "1" {
			// Its output follows, from its start (RunProcess).
			p, err := k.find(strconv.Itoa(info.ID))
			if err != nil {
				keeperError(w, err)
				return
			}
			k.follow(w, r, p, 0)
			return
		}
		writeKeeperJSON(w, info)
	})
	mux.HandleFunc("GET /processes", func(w http.ResponseWriter, r *http.Request) {
		writeKeeperJSON(w, k.list())
	})
	mux.HandleFunc("POST /processes/{ref}/signal", func(w http.ResponseWriter, r *http.Request) {
		sig, err := strconv.Atoi(r.URL.Query().Get("signal"))
		if err != nil {
			keeperError(w, contract.FieldErr(contract.FieldSignal, "must be a number"))
			return
		}
		k.with(w, r, func(p *keptProcess) error { return k.signal(p, unix.Signal(sig)) })
	})
	mux.HandleFunc("POST /processes/{ref}/stdin", func(w http.ResponseWriter, r *http.Request) {
		k.with(w, r, func(p *keptProcess) error { return p.sendStdin(k.ctx, r.Body, r.URL.Query().Get("close") == "1") })
	})
	mux.HandleFunc("POST /processes/{ref}/resize", func(w http.ResponseWriter, r *http.Request) {
		var size contract.TermSize
		if err := json.NewDecoder(r.Body).Decode(&size); err != nil {
			keeperError(w, contract.FieldErr(contract.FieldPTY, "bad size: %v", err))
			return
		}
		k.with(w, r, func(p *keptProcess) error { return p.resize(k.ctx, size) })
	})
	mux.HandleFunc("GET /processes/{ref}/output", func(w http.ResponseWriter, r *http.Request) {
		p, err := k.find(r.PathValue("ref"))
		if err != nil {
			keeperError(w, err)
			return
		}
		from, _ := strconv.ParseInt(r.URL.Query().Get("from"), 10, 64)
		k.follow(w, r, p, from)
	})
	return mux
}

// with runs f on the process the request names and answers with its
// error, or 204.
func (k *keeper) with(w http.ResponseWriter, r *http.Request, f func(*keptProcess) error) {
	p, err := k.find(r.PathValue("ref"))
	if err == nil {
		err = f(p)
	}
	if err != nil {
		keeperError(w, err)
		return
	}
	_ = reaper.TouchSession(k.runDir, time.Now())
	w.WriteHeader(http.StatusNoContent)
}

// follow streams p's output from offset from as JSON lines of
// ProcessEvent: p first, its output as it comes, p again at its end.
func (k *keeper) follow(w http.ResponseWriter, r *http.Request, p *keptProcess, from int64) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	info := k.info(p)
	if enc.Encode(contract.ProcessEvent{Start: &info}) != nil {
		return
	}
	flush()
	for {
		out, next, dropped, done, more := p.out.read(from)
		from = next
		if dropped > 0 && enc.Encode(contract.ProcessEvent{Dropped: dropped}) != nil {
			return
		}
		for _, c := range out {
			if enc.Encode(contract.ProcessEvent{Stream: c.stream, Data: c.data}) != nil {
				return
			}
		}
		if done {
			info := k.info(p)
			_ = enc.Encode(contract.ProcessEvent{End: &info})
			return
		}
		flush()
		select {
		case <-more:
		case <-r.Context().Done():
			return
		}
	}
}

// info is a copy of p's description.
func (k *keeper) info(p *keptProcess) contract.ProcessInfo {
	k.mu.Lock()
	defer k.mu.Unlock()
	return p.info
}

// keeperFault is how the keeper sends an error to its client.
type keeperFault struct {
	Error     string `json:"error"`
	Field     string `json:"field,omitempty"`
	NotFound  bool   `json:"not_found,omitempty"`
	Forbidden bool   `json:"forbidden,omitempty"`
	NoNetwork bool   `json:"no_network,omitempty"`
}

func keeperError(w http.ResponseWriter, err error) {
	f := keeperFault{Error: err.Error()}
	var fe *contract.FieldError
	status := http.StatusInternalServerError
	switch {
	case errors.As(err, &fe):
		f.Error, f.Field, f.Forbidden, status = fe.Message, fe.Field, fe.Forbidden, http.StatusBadRequest
	case errors.Is(err, contract.ErrProcessNotFound):
		f.NotFound, status = true, http.StatusNotFound
	case errors.Is(err, contract.ErrNoNetwork):
		f.NoNetwork, status = true, http.StatusConflict
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(f)
}

func writeKeeperJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
