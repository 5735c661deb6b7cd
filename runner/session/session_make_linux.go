package session

// Making a session: its labels, record, first process and interpreter.

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/oci"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/runner/keeper"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/containerd/errdefs"
	"github.com/containerd/log"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// A session is a sandbox that lives across calls (docs/reference.md,
// "Sessions"). It is a containerd container like any sandbox, labelled
// with its caller, deadline and idle timeout, so that any boxer process
// can find, use, expire and reap it once it is made (until then it is its
// maker's alone: reaper.LabelSessionMade); its run directory holds its
// request (sessionRecord), its calls' code and a lock that orders its
// calls.
//
// Its first process is boxer-init running a sleep until the session's
// backstop, the operator's maximum lifetime after it was made: when the
// sleep ends, PID 1 exits and the kernel ends every process in the
// sandbox, whether or not a boxer process runs. The session's deadline
// itself is its label's (reaper.LabelSessionDeadline), which a caller may
// move within the backstop (SetSessionTimeout): a sleep cannot be told a
// new end, so every boxer process that finds the session past its
// deadline ends it (a server's sweep every few seconds, the CLI's reaper
// at its next command). As
// PID 1 of its PID namespace, boxer-init cannot be killed from inside, and
// it reaps what calls leave behind (their orphans are its children). For python and python-data, the
// session's driver (session_driver.py) is a process containerd execs in
// the sandbox when the session is made (the same user, limits, seccomp
// filter and empty capabilities as the first): one interpreter that runs
// every call's code in the same namespace, reached through the session's
// wire (keeper.OpenWire), with no process made per call. For the
// other languages each call is a process containerd execs, with its own
// streams.

//go:embed session_driver.py
var sessionDriver string

const (
	sessionIDPrefix = "bxs-"
	// driverFile is delivered read-only in /code.
	driverFile = ".boxer-session.py"
	// driverPid and callPid hold the PIDs a timeout signals, from inside
	// (under runsc a signal from the host reaches only runsc's own exec
	// process, not the program).
	driverPid    = "/tmp/.boxer-session.pid"
	callPid      = "/tmp/.boxer-call.pid"
	driverExecID = "driver"
	// interruptGrace is how long an interpreter has to come back from the
	// interrupt at a call's timeout before its session is ended.
	interruptGrace    = 3 * time.Second
	sessionRecordFile = keeper.RecordFile
	sessionLockFile   = "session.lock"
	sessionCallsFile  = "calls"
)

// interpreted says whether a language's calls share one interpreter.
func interpreted(lang string) bool { return lang == "python" || lang == "python-data" }

// sessionMeta is what makes a sandbox a session's.
type sessionMeta struct {
	caller string
	held   bool
	// heir takes it over when its holder is gone (Options.SessionHeir).
	heir     string
	created  time.Time
	deadline time.Time
	// backstop is the latest deadline the session may have: its sandbox
	// ends itself then.
	backstop time.Time
	idle     time.Duration
	// ready: made ahead of requests, it stays unmade until one claims it
	// (session_ready_linux.go).
	ready bool
	// restore is the checkpoint a fork is restored from, with the first
	// program's arguments it was checkpointed with (session_snapshot_linux.go).
	restore     string
	restoreArgs []string
	// served: its first program is its process server, boxer-procd
	// (keeper_served_linux.go), which starts its processes. first: its
	// first program is its interpreter (driverFirst). driver: its
	// interpreter's command, a process of its process server that its
	// keeper starts (sessionRecord's Driver).
	served, first bool
	driver        []string
}

// sessionRecord is a session's request, in its run directory. Deadline
// is the one it was made with: the label holds the current one.
type sessionRecord struct {
	Request   contract.Request `json:"request"`
	Idle      time.Duration    `json:"idle"`
	CreatedAt time.Time        `json:"created_at"`
	Deadline  time.Time        `json:"deadline"`
	// Backstop is zero in the record of a session made by a boxer before
	// it: its sandbox ends itself at its Deadline.
	Backstop time.Time `json:"backstop,omitzero"`
	// SecretEnv names the delivered secrets its processes get as
	// variables too (names only: the values are in its /run).
	SecretEnv []string `json:"secret_env,omitempty"`
	// DriverFirst: its interpreter is its sandbox's first program, not a
	// process exec'd beside it (driverFirst).
	DriverFirst bool `json:"driver_first,omitempty"`
	// ProcServer: its first program is its process server (sessionMeta's
	// served).
	ProcServer bool `json:"proc_server,omitempty"`
	// Driver is its interpreter's command when its keeper starts it
	// through its process server, and relays its wire (on gVisor, where
	// a checkpoint keeps only the first program's processes).
	Driver []string `json:"driver,omitempty"`
}

// kind sets how a session of req runs: with a process server when
// boxer-procd is installed (served). An interpreted session's interpreter
// is, on runc, an exec beside the first program; on gVisor, whose restore
// from a checkpoint kills every process exec'd into the sandbox
// (session_snapshot_linux.go), one of the process server's (driver), or
// without one its sandbox's first program (first: driverFirst, its
// streams the task's, under boxer-init, which ends the sandbox at the
// backstop).
func (m *sessionMeta) kind(r *Layer, req contract.Request) error {
	m.served = r.server != ""
	if req.Runtime != "runsc" || !interpreted(req.Lang) {
		return nil
	}
	if !m.served {
		m.first = true
		return nil
	}
	p, err := contract.LookupPreset(req.Lang)
	if err != nil {
		return err
	}
	m.driver = append(slices.Clone(p.Command), path.Join("/code", driverFile), driverPid)
	return nil
}

// shape makes spec a session's: its first process waits for the backstop,
// or (driverFirst) is its interpreter, ended at the backstop; a fork's is
// the one its checkpoint was made with. labels get the session's.
func (m *sessionMeta) shape(spec *specs.Spec, req contract.Request, secretEnv []string, labels map[string]string) error {
	secs := strconv.FormatInt(int64(time.Until(m.backstop)/time.Second)+1, 10)
	switch {
	case m.restoreArgs != nil:
		spec.Process.Args = m.restoreArgs
	case m.first:
		p, err := contract.LookupPreset(req.Lang)
		if err != nil {
			return err
		}
		args := keeper.WithSecretEnv(append(slices.Clone(p.Command), path.Join("/code", driverFile), driverPid), secretEnv, spec.Process.Env)
		spec.Process.Args = append([]string{oci.InitPath, "-t", secs, "--"}, args...)
	case m.served:
		spec.Process.Args = keeper.ServerArgs(secs)
	default:
		spec.Process.Args = oci.InitArgs([]string{"sleep", secs}, false)
	}
	labels[reaper.LabelSession] = m.caller
	if m.heir != "" {
		labels[reaper.LabelSessionHeir] = m.heir
	}
	labels[reaper.LabelSessionLang] = req.Lang
	labels[reaper.LabelSessionDeadline] = strconv.FormatInt(m.deadline.Unix(), 10)
	labels[reaper.LabelSessionIdle] = strconv.FormatInt(int64(m.idle/time.Second), 10)
	labels[reaper.LabelSessionUsed] = strconv.FormatInt(time.Now().Unix(), 10)
	if m.ready {
		labels[reaper.LabelSessionReady] = "true"
	}
	return nil
}

func (r *Layer) newSessionID() string {
	if r.sessionID != nil {
		return r.sessionID(sessionIDPrefix)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return sessionIDPrefix + hex.EncodeToString(b)
}

// validSessionID: what newSessionID makes (16 hex digits, and a fleet's
// dash and 20 more), and nothing that could name another container or
// path.
func validSessionID(id string) bool {
	rest, ok := strings.CutPrefix(id, sessionIDPrefix)
	if !ok {
		return false
	}
	if head, tail, fleet := strings.Cut(rest, "-"); fleet {
		if len(tail) != 20 {
			return false
		}
		if _, err := hex.DecodeString(tail); err != nil {
			return false
		}
		rest = head
	}
	if len(rest) != 16 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil
}

// CreateSession makes a session and returns it once it runs (its
// interpreter may still be starting: the first call waits for it).
func (r *Layer) CreateSession(ctx context.Context, sr contract.SessionRequest, max contract.Maxima, smax contract.SessionMaxima) (_ contract.Session, retErr error) {
	defer func() { retErr = r.Fault(ctx, retErr) }()
	req, idle, lifetime, err := sr.Normalize(max, smax)
	if err != nil {
		return contract.Session{}, err
	}
	id := r.newSessionID()
	release, err := r.sessionRoom(ctx, smax, sr.Caller, id, 1)
	if err != nil {
		return contract.Session{}, err
	}
	defer release()
	if req.HasEgress() && len(r.keeper) == 0 {
		return contract.Session{}, contract.FieldErr(contract.FieldAllowHosts, "needs the session's keeper to serve its network, which this boxer cannot start: use the boxer binary")
	}
	if len(req.Secrets) > 0 && len(r.keeper) == 0 {
		return contract.Session{}, contract.FieldErr(contract.FieldSecrets, "%v", keeper.ErrSecretsKeeper)
	}
	if err := r.CheckSecretsAvailable(req); err != nil {
		return contract.Session{}, err
	}
	if s, ok := r.claimReady(ctx, sr, req, idle, lifetime); ok {
		return s, nil
	}
	rootfs, err := r.Rootfs(ctx, req)
	if err != nil {
		return contract.Session{}, err
	}
	now := time.Now()
	sb := r.newSandbox(id, req, false)
	// normalize capped lifetime at the maximum: the backstop is after the
	// deadline.
	backstop := now.Add(contract.Or(smax.Lifetime, contract.DefaultMaxSessionLifetime))
	sb.session = &sessionMeta{caller: sr.Caller, held: sr.Held, heir: heirOf(sr), created: now, deadline: now.Add(lifetime), backstop: backstop, idle: idle}
	if err := sb.session.kind(r, req); err != nil {
		return contract.Session{}, err
	}
	err = sb.Make(ctx, rootfs)
	if err == nil {
		err = sb.openSession(ctx)
	}
	if err != nil {
		if ended := r.endedWhileMade(ctx, sb); ended != nil {
			log.G(ctx).WithError(err).Debugf("making session %s", sb.ID)
			err = ended
		}
		if derr := sb.destroy(ctx); derr != nil {
			err = errors.Join(err, derr)
		}
		var rt *box.RuntimeError
		if errors.As(err, &rt) {
			if _, detail, ok := contract.ExecFailure(rt.Error()); ok {
				err = fmt.Errorf("the session's image cannot run it: %s", detail)
			}
		}
		return contract.Session{}, err
	}
	// The keeper of one that lives on its own ends it on time with no
	// other boxer process running (a held one's holder does); a command
	// that needs a keeper starts one should this fail. A session with
	// network or secrets needs its keeper at once, held or not: it serves
	// the gateway, and only it holds the secrets once this process exits.
	ks, err := r.SecretsOf(sb.Sandbox)
	switch {
	case err != nil:
		return contract.Session{}, errors.Join(err, sb.destroy(ctx))
	case sb.Link != nil:
		if err := r.HandLink(ctx, sb.Sandbox, ks); err != nil {
			return contract.Session{}, errors.Join(fmt.Errorf("handing the session's network to its keeper: %w", err), sb.destroy(ctx))
		}
	case ks != nil:
		if err := r.HandKeeper(ctx, sb.Sandbox, keeper.Handoff{Secrets: ks}); err != nil {
			return contract.Session{}, errors.Join(fmt.Errorf("handing the session's secrets to its keeper: %w", err), sb.destroy(ctx))
		}
	case len(r.keeper) > 0 && !sr.Held:
		if _, err := r.SpawnKeeper(sb.RunDir, sb.ID, keeper.Handoff{}); err != nil {
			log.G(ctx).WithError(err).Warn("starting the session's keeper")
		}
	}
	return sessionInfo(sb.ID, sr.Caller, sessionRecord{Request: req, Idle: idle, CreatedAt: now, Deadline: sb.session.deadline}, nil, now), nil
}

// openSession delivers the session's support files and record, starts its
// first process and its interpreter, and marks it made, letting go of it
// unless it is held.
func (sb *sandbox) openSession(ctx context.Context) error {
	p, err := contract.LookupPreset(sb.Req.Lang)
	if err != nil {
		return err
	}
	if err := sb.writeSupport(p); err != nil {
		return err
	}
	rec, err := json.Marshal(sessionRecord{Request: sb.Req, Idle: sb.session.idle, CreatedAt: sb.session.created, Deadline: sb.session.deadline, Backstop: sb.session.backstop, SecretEnv: sb.Dirs.SecretEnv, DriverFirst: sb.session.first, ProcServer: sb.session.served, Driver: sb.session.driver})
	if err != nil {
		return err
	}
	if err := reaper.WriteFileAtomic(filepath.Join(sb.RunDir, sessionRecordFile), rec, 0o600); err != nil {
		return fmt.Errorf("writing session record: %w", err)
	}
	uid, gid := sb.HostIDs()
	if sb.Req.CopyIn != "" {
		if err := box.CopyIn(sb.Req.CopyIn, sb.Dirs.Workspace, sb.Req.TmpBytes, uid, gid); err != nil {
			return err
		}
	}
	if err := box.WriteFiles(sb.Dirs.Workspace, sb.Req.Files, uid, gid); err != nil {
		return err
	}
	if err := sb.To(box.StateRunning, box.StateCreated); err != nil {
		return err
	}
	opCtx := context.WithoutCancel(ctx)
	if err := sb.Task.Start(opCtx); err != nil {
		return &box.RuntimeError{Step: "starting session", Err: err}
	}
	if sb.session.first || sb.session.served {
		// Its streams are the wire, which calls open, or its process
		// server's channel, which its keeper opens.
		sb.Task.IO().Close()
	}
	if interpreted(sb.Req.Lang) && !sb.session.first && sb.session.driver == nil {
		spec, err := sb.Container.Spec(opCtx)
		if err != nil {
			return fmt.Errorf("reading session spec: %w", err)
		}
		proc := *spec.Process
		proc.Args = keeper.WithSecretEnv(append(p.Command, path.Join("/code", driverFile), driverPid), sb.Dirs.SecretEnv, proc.Env)
		driver, err := sb.Task.Exec(opCtx, driverExecID, &proc, keeper.WireCreator(sb.RunDir))
		if err != nil {
			return &box.RuntimeError{Step: "starting the session's interpreter", Err: err}
		}
		err = driver.Start(opCtx)
		driver.IO().Close()
		if err != nil {
			return &box.RuntimeError{Step: "starting the session's interpreter", Err: err}
		}
	}
	if sb.session.ready {
		// A ready session is made when a request claims it (claimReady).
		return nil
	}
	// Made: its idle time starts now; other processes may end it from now
	// on, and (not held) it lives on its own (see reaper.SessionEnd).
	if err := reaper.TouchSession(sb.RunDir, time.Now()); err != nil {
		return fmt.Errorf("writing session record: %w", err)
	}
	made := map[string]string{reaper.LabelSessionMade: "true"}
	if !sb.session.held {
		made[reaper.LabelOwner] = ""
	}
	labels, err := sb.Container.SetLabels(opCtx, made)
	if err != nil {
		return fmt.Errorf("marking session made: %w", err)
	}
	if reason := labels[reaper.LabelSessionEnding]; reason != "" {
		return &contract.SessionEndedError{ID: sb.ID, Reason: reason}
	}
	return nil
}

// writeSupport writes the session's support files in its code directory:
// its preset's, and its interpreter's.
func (sb *sandbox) writeSupport(p contract.Preset) error {
	support := maps.Clone(p.Support)
	if support == nil {
		support = map[string]string{}
	}
	if interpreted(sb.Req.Lang) {
		support[driverFile], support[cellFile], support[bashFile] = sessionDriver, sessionCell, sessionBash
		support[nodeFile], support[nodeDriverFile], support[chartFile] = sessionNode, nodeDriver, sessionChart
	}
	if sb.session != nil && sb.session.served {
		if err := box.LinkHelper(sb.r.server, sb.Dirs.Code, path.Base(keeper.ServerPath)); err != nil {
			return err
		}
	}
	for name, content := range support {
		if err := os.WriteFile(filepath.Join(sb.Dirs.Code, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}

// endedWhileMade says, once making sb failed, whether another remover
// ended it meanwhile (its process's CloseSessions, at a shutdown): a
// SessionEndedError with the remover's reason, which says more than what
// failed under it. nil if it was not.
func (r *Layer) endedWhileMade(ctx context.Context, sb *sandbox) error {
	if sb.Container == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reaper.CleanupTimeout)
	defer cancel()
	info, err := sb.Container.Info(cctx)
	switch {
	case errdefs.IsNotFound(err):
		return &contract.SessionEndedError{ID: sb.ID, Reason: reaper.EndRemoved}
	case err != nil:
		return nil
	case info.Labels[reaper.LabelSessionEnding] != "":
		return &contract.SessionEndedError{ID: sb.ID, Reason: info.Labels[reaper.LabelSessionEnding]}
	}
	return nil
}
