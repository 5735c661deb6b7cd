package runner

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/cgroups"
	"github.com/boxer-dev/boxer/oci"
	"github.com/boxer-dev/boxer/reaper"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"
	"github.com/containerd/log"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// A session is a sandbox that lives across calls (docs/reference.md,
// "Sessions"). It is a containerd container like any sandbox, labelled
// with its caller, deadline and idle timeout, so that any boxer process
// can find, use, expire and reap it; its run directory holds its request
// (sessionRecord), its calls' code and a lock that orders its calls.
//
// Its first process is boxer-init running a sleep as long as the
// session's lifetime: when the sleep ends, PID 1 exits and the kernel ends
// every process in the sandbox, whether or not a boxer process runs. As
// PID 1 of its PID namespace, boxer-init cannot be killed from inside, and
// it reaps what calls leave behind (their orphans are its children). For python and python-data, the
// session's driver (session_driver.py) is a process containerd execs in
// the sandbox when the session is made (the same user, limits, seccomp
// filter and empty capabilities as the first): one interpreter that runs
// every call's code in the same namespace, reached through the session's
// wire (session_wire_linux.go), with no process made per call. For the
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
	sessionRecordFile = "session.json"
	sessionLockFile   = "session.lock"
	sessionCallsFile  = "calls"
)

// interpreted says whether a language's calls share one interpreter.
func interpreted(lang string) bool { return lang == "python" || lang == "python-data" }

// sessionMeta is what makes a sandbox a session's.
type sessionMeta struct {
	caller   string
	held     bool
	created  time.Time
	deadline time.Time
	idle     time.Duration
}

// sessionRecord is a session's request, in its run directory.
type sessionRecord struct {
	Request   Request       `json:"request"`
	Idle      time.Duration `json:"idle"`
	CreatedAt time.Time     `json:"created_at"`
	Deadline  time.Time     `json:"deadline"`
}

// shape makes spec a session's: its first process only waits for the
// deadline. labels get the session's.
func (m *sessionMeta) shape(spec *specs.Spec, req Request, labels map[string]string) {
	secs := int64(time.Until(m.deadline)/time.Second) + 1
	spec.Process.Args = oci.InitArgs([]string{"sleep", strconv.FormatInt(secs, 10)}, false)
	labels[reaper.LabelSession] = m.caller
	labels[reaper.LabelSessionLang] = req.Lang
	labels[reaper.LabelSessionDeadline] = strconv.FormatInt(m.deadline.Unix(), 10)
	labels[reaper.LabelSessionIdle] = strconv.FormatInt(int64(m.idle/time.Second), 10)
	labels[reaper.LabelSessionUsed] = strconv.FormatInt(time.Now().Unix(), 10)
}

func newSessionID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return sessionIDPrefix + hex.EncodeToString(b)
}

// validSessionID: what newSessionID makes, and nothing that could name
// another container or path.
func validSessionID(id string) bool {
	rest, ok := strings.CutPrefix(id, sessionIDPrefix)
	if !ok || len(rest) != 16 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil
}

// CreateSession makes a session and returns it once it runs (its
// interpreter may still be starting: the first call waits for it).
func (r *Runner) CreateSession(ctx context.Context, sr SessionRequest, max Maxima, smax SessionMaxima) (_ Session, retErr error) {
	defer func() { retErr = r.fault(ctx, retErr) }()
	req, idle, lifetime, err := sr.normalize(max, smax)
	if err != nil {
		return Session{}, err
	}
	if err := r.sessionRoom(ctx, or(smax.Sessions, DefaultMaxSessions)); err != nil {
		return Session{}, err
	}
	rootfs, err := r.rootfsFor(ctx, req)
	if err != nil {
		return Session{}, err
	}
	now := time.Now()
	sb := r.newSandbox(newSessionID(), req, false)
	sb.session = &sessionMeta{caller: sr.Caller, held: sr.Held, created: now, deadline: now.Add(lifetime), idle: idle}
	err = sb.make(ctx, rootfs)
	if err == nil {
		err = sb.openSession(ctx)
	}
	if err != nil {
		if derr := sb.destroy(ctx); derr != nil {
			err = errors.Join(err, derr)
		}
		var rt *runtimeError
		if errors.As(err, &rt) {
			if _, detail, ok := execFailure(rt.Error()); ok {
				err = fmt.Errorf("the session's image cannot run it: %s", detail)
			}
		}
		return Session{}, err
	}
	return sessionInfo(sb.id, sr.Caller, sessionRecord{Request: req, Idle: idle, CreatedAt: now, Deadline: sb.session.deadline}, now), nil
}

// sessionRoom refuses a new session when max live already.
func (r *Runner) sessionRoom(ctx context.Context, max int) error {
	cs, err := r.client.Containers(ctx, `labels."`+reaper.LabelSession+`"`)
	if err != nil {
		return fmt.Errorf("listing sessions: %w", err)
	}
	live := 0
	for _, c := range cs {
		if r.expire(ctx, c) == "" {
			live++
		}
	}
	if live >= max {
		return &SessionLimitError{Max: max}
	}
	return nil
}

// openSession delivers the session's support files and record, starts its
// first process and its interpreter, and lets go of it unless it is held.
func (sb *sandbox) openSession(ctx context.Context) error {
	p, err := LookupPreset(sb.req.Lang)
	if err != nil {
		return err
	}
	support := maps.Clone(p.Support)
	if support == nil {
		support = map[string]string{}
	}
	if interpreted(sb.req.Lang) {
		support[driverFile] = sessionDriver
	}
	for name, content := range support {
		if err := os.WriteFile(filepath.Join(sb.dirs.Code, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	rec, err := json.Marshal(sessionRecord{Request: sb.req, Idle: sb.session.idle, CreatedAt: sb.session.created, Deadline: sb.session.deadline})
	if err != nil {
		return err
	}
	if err := reaper.WriteFileAtomic(filepath.Join(sb.runDir, sessionRecordFile), rec, 0o600); err != nil {
		return fmt.Errorf("writing session record: %w", err)
	}
	if err := reaper.TouchSession(sb.runDir, sb.session.created); err != nil {
		return fmt.Errorf("writing session record: %w", err)
	}
	if sb.req.CopyIn != "" {
		if err := copyIn(sb.req.CopyIn, sb.dirs.Workspace, sb.req.TmpBytes, sb.req.UID, sb.req.GID); err != nil {
			return err
		}
	}
	if err := writeFiles(sb.dirs.Workspace, sb.req.Files, sb.req.UID, sb.req.GID); err != nil {
		return err
	}
	if err := sb.to(stateRunning, stateCreated); err != nil {
		return err
	}
	opCtx := context.WithoutCancel(ctx)
	if err := sb.task.Start(opCtx); err != nil {
		return &runtimeError{step: "starting session", err: err}
	}
	if interpreted(sb.req.Lang) {
		spec, err := sb.container.Spec(opCtx)
		if err != nil {
			return fmt.Errorf("reading session spec: %w", err)
		}
		proc := *spec.Process
		proc.Args = append(p.Command, path.Join("/code", driverFile), driverPid)
		driver, err := sb.task.Exec(opCtx, driverExecID, &proc, wireCreator(sb.runDir))
		if err != nil {
			return &runtimeError{step: "starting the session's interpreter", err: err}
		}
		err = driver.Start(opCtx)
		driver.IO().Close()
		if err != nil {
			return &runtimeError{step: "starting the session's interpreter", err: err}
		}
	}
	if !sb.session.held {
		// From now on the session lives on its own (see reaper.SessionEnd).
		if _, err := sb.container.SetLabels(opCtx, map[string]string{reaper.LabelOwner: ""}); err != nil {
			return fmt.Errorf("detaching session: %w", err)
		}
	}
	return nil
}

// liveSession is a session loaded for a call.
type liveSession struct {
	id     string
	c      containerd.Container
	task   containerd.Task
	rec    sessionRecord
	runDir string
}

// loadSession finds session id of caller ("" for any caller), ending it
// first if it is over. A call in an interpreted session skips asking
// containerd whether its sandbox runs: its wire says so.
func (r *Runner) loadSession(ctx context.Context, id, caller string, forCall bool) (*liveSession, error) {
	if !validSessionID(id) {
		return nil, ErrSessionNotFound
	}
	c, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil, ErrSessionNotFound
	} else if err != nil {
		return nil, fmt.Errorf("loading session: %w", err)
	}
	info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
	if err != nil {
		return nil, fmt.Errorf("loading session: %w", err)
	}
	owner, ok := info.Labels[reaper.LabelSession]
	if !ok || caller != "" && owner != caller {
		return nil, ErrSessionNotFound
	}
	ask := !forCall || !interpreted(info.Labels[reaper.LabelSessionLang])
	if reason := r.expireInfo(ctx, c, info, ask); reason != "" {
		return nil, &SessionEndedError{ID: id, Reason: reason}
	}
	s := &liveSession{id: id, c: c, runDir: filepath.Join(r.runsDir, id)}
	if ask {
		if s.task, err = c.Task(ctx, nil); err != nil {
			return nil, r.endSession(ctx, c, reaper.EndExited)
		}
	}
	data, err := os.ReadFile(filepath.Join(s.runDir, sessionRecordFile))
	if err == nil {
		err = json.Unmarshal(data, &s.rec)
	}
	if err != nil {
		return nil, fmt.Errorf("reading session %s: %w", id, err)
	}
	return s, nil
}

// expire ends c if it is over, and says why ("" if it lives).
func (r *Runner) expire(ctx context.Context, c containerd.Container) string {
	info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
	if err != nil {
		return ""
	}
	return r.expireInfo(ctx, c, info, true)
}

// expireInfo is expire for c, whose info is at hand; ask says whether to
// ask containerd whether its sandbox runs.
func (r *Runner) expireInfo(ctx context.Context, c containerd.Container, info containers.Container, ask bool) string {
	var runs func() bool
	if ask {
		runs = func() bool { return running(ctx, c) }
	}
	used := reaper.LastUsed(info.Labels, filepath.Join(r.runsDir, c.ID()))
	reason := reaper.SessionEnd(info.Labels, used, time.Now(), runs)
	if reason == "" && ask && info.Labels[reaper.LabelOwner] == r.owner && !running(ctx, c) {
		// Held by this process: its sandbox ended (it is made by now).
		reason = reaper.EndExited
	}
	if reason != "" {
		_ = r.endSession(ctx, c, reason)
	}
	return reason
}

// running says whether c's task runs.
func running(ctx context.Context, c containerd.Container) bool {
	task, err := c.Task(ctx, nil)
	if err != nil {
		return false
	}
	st, err := task.Status(ctx)
	return err == nil && st.Status == containerd.Running
}

// endSession removes a session's sandbox and returns a SessionEndedError
// that says why.
func (r *Runner) endSession(ctx context.Context, c containerd.Container, reason string) error {
	if err := r.destroyLeftover(ctx, c); err != nil {
		log.G(ctx).WithError(err).Warnf("removing session %s", c.ID())
	}
	return &SessionEndedError{ID: c.ID(), Reason: reason}
}

// RemoveSession ends a session of caller ("" for any).
func (r *Runner) RemoveSession(ctx context.Context, id, caller string) error {
	s, err := r.loadSession(ctx, id, caller, false)
	var ended *SessionEndedError
	if errors.As(err, &ended) {
		return nil
	} else if err != nil {
		return err
	}
	if err := r.destroyLeftover(ctx, s.c); err != nil {
		return fmt.Errorf("removing session %s: %w", id, err)
	}
	return nil
}

// Sessions lists the live sessions of caller ("" for all), ending those
// that are over.
func (r *Runner) Sessions(ctx context.Context, caller string) ([]Session, error) {
	cs, err := r.client.Containers(ctx, `labels."`+reaper.LabelSession+`"`)
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	out := []Session{}
	for _, c := range cs {
		info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
		if err != nil || caller != "" && info.Labels[reaper.LabelSession] != caller || r.expire(ctx, c) != "" {
			continue
		}
		var rec sessionRecord
		data, err := os.ReadFile(filepath.Join(r.runsDir, c.ID(), sessionRecordFile))
		if err != nil || json.Unmarshal(data, &rec) != nil {
			continue
		}
		used := reaper.LastUsed(info.Labels, filepath.Join(r.runsDir, c.ID()))
		out = append(out, sessionInfo(c.ID(), info.Labels[reaper.LabelSession], rec, used))
	}
	return out, nil
}

func sessionInfo(id, caller string, rec sessionRecord, used time.Time) Session {
	return Session{
		ID: id, Lang: rec.Request.Lang, Runtime: rec.Request.Runtime, Image: rec.Request.image(),
		CreatedAt: rec.CreatedAt.UTC().Truncate(time.Second), ExpiresAt: rec.Deadline.UTC().Truncate(time.Second),
		LastUsed: used.UTC().Truncate(time.Second), IdleTimeout: Seconds(rec.Idle),
		Interpreter: interpreted(rec.Request.Lang), Caller: caller,
	}
}

// ExpireSessions ends every session that is over (a server calls it on a
// timer: the idle timeout holds without a call) and returns them.
func (r *Runner) ExpireSessions(ctx context.Context) []EndedSession {
	cs, err := r.client.Containers(ctx, `labels."`+reaper.LabelSession+`"`)
	if err != nil {
		return nil
	}
	var ended []EndedSession
	for _, c := range cs {
		info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
		if err != nil {
			continue
		}
		if reason := r.expire(ctx, c); reason != "" {
			ended = append(ended, EndedSession{ID: c.ID(), Caller: info.Labels[reaper.LabelSession], Reason: reason})
		}
	}
	return ended
}

// CloseSessions ends the sessions this process holds whose caller is
// caller ("" for all), for reason (a client that disconnected, a server
// that shuts down), and returns them.
func (r *Runner) CloseSessions(ctx context.Context, caller, reason string) []EndedSession {
	// One filter, its selectors joined by a comma: containerd ORs
	// separate filters, which would match every sandbox of this process.
	cs, err := r.client.Containers(ctx, `labels."`+reaper.LabelSession+`",labels."`+reaper.LabelOwner+`"==`+strconv.Quote(r.owner))
	if err != nil {
		return nil
	}
	var ended []EndedSession
	for _, c := range cs {
		info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
		if err != nil || caller != "" && info.Labels[reaper.LabelSession] != caller {
			continue
		}
		_ = r.endSession(ctx, c, reason)
		ended = append(ended, EndedSession{ID: c.ID(), Caller: info.Labels[reaper.LabelSession], Reason: reason})
	}
	return ended
}

// lock takes the session's call lock: calls run one at a time, whichever
// boxer process makes them. It waits for ctx.
func (s *liveSession) lock(ctx context.Context) (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.runDir, sessionLockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking session: %w", err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking session: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ErrInterrupted
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// next numbers the session's calls (under the lock).
func (s *liveSession) next() int {
	file := filepath.Join(s.runDir, sessionCallsFile)
	data, _ := os.ReadFile(file)
	n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	n++
	_ = os.WriteFile(file, []byte(strconv.Itoa(n)), 0o600)
	return n
}

// touch sets when the session was last used.
func (s *liveSession) touch(ctx context.Context, t time.Time) {
	if err := reaper.TouchSession(s.runDir, t); err != nil {
		log.G(ctx).WithError(err).Debug("marking session used")
	}
}

// RunInSession runs one call in session id of caller ("" for any). A
// non-nil error means the call did not run (the session is gone, or the
// call was refused) or was interrupted.
func (r *Runner) RunInSession(ctx context.Context, id, caller string, call SessionCall, max Maxima) (res Result, retErr error) {
	res = Result{ID: id, Session: id, Status: StatusError, ExitCode: ExitBoxer}
	defer func() {
		if retErr != nil {
			retErr = r.fault(ctx, retErr)
			res.Error = retErr.Error()
		}
	}()
	s, err := r.loadSession(ctx, id, caller, true)
	if err != nil {
		return res, err
	}
	req := s.rec.Request
	res.Runtime, res.Image = req.Runtime, req.image()
	if call, err = call.normalize(req, max); err != nil {
		return res, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return res, err
	}
	defer unlock()
	n := s.next()
	res.ID = fmt.Sprintf("%s.%d", id, n)
	s.touch(ctx, time.Now().Add(call.Timeout+interruptGrace))
	res, err = r.call(ctx, s, n, call, res)
	if res.SessionEnded == "" {
		s.touch(ctx, time.Now())
	}
	return res, err
}

// call runs call n in s.
func (r *Runner) call(ctx context.Context, s *liveSession, n int, call SessionCall, res Result) (Result, error) {
	req := s.rec.Request
	p, err := LookupPreset(req.Lang)
	if err != nil {
		return res, err
	}
	name := fmt.Sprintf("call-%d%s", n, path.Ext(p.File))
	codeFile := filepath.Join(s.runDir, "code", name)
	if err := os.WriteFile(codeFile, call.Code, 0o644); err != nil {
		return res, fmt.Errorf("writing code: %w", err)
	}
	defer os.Remove(codeFile)
	workspace := reaper.WorkspaceDir(s.runDir)
	if err := writeFiles(workspace, call.Files, req.UID, req.GID); err != nil {
		return res, err
	}
	stdout, stderr := newCapped(call.OutputLimit, call.Stdout), newCapped(call.OutputLimit, call.Stderr)
	cg := reaper.CgroupsPath(r.namespace, s.id)
	before, _ := cgroups.ReadStats(r.cgroups, cg)
	peak := cgroups.WatchPeak(r.cgroups, cg)
	var end callEnd
	if interpreted(req.Lang) {
		end, err = r.wireCall(ctx, s, n, name, call, stdout, stderr)
	} else {
		end, err = r.execCall(ctx, s, n, p, name, call, stdout, stderr)
	}
	if err != nil {
		return startFailed(res, err)
	}
	facts := end.facts
	res.SessionEnded = end.sessionEnded
	if res.SessionEnded != "" {
		res.Error = fmt.Sprintf("the session ended: %s", EndText(res.SessionEnded))
	}
	res.DurationMs = float64(end.ended.Sub(end.started).Microseconds()) / 1000
	after, _ := cgroups.ReadStats(r.cgroups, cg)
	res.CPUTimeMs = float64((after.CPUTimeNs-min(before.CPUTimeNs, after.CPUTimeNs))/1000) / 1000
	facts.oomKills = after.OOMKills - min(before.OOMKills, after.OOMKills)
	res.MemoryPeakBytes, res.MemoryPeakScope = after.MemoryPeakBytes, "session"
	if peak != nil {
		if v, err := peak.Read(); err == nil {
			res.MemoryPeakBytes, res.MemoryPeakScope = v, "call"
		}
	}
	res.Stdout, res.StdoutTruncated = stdout.text()
	res.Stderr, res.StderrTruncated = stderr.text()
	if len(call.ReturnFiles) > 0 && !facts.interrupted {
		res.Files = returnFiles(workspace, call.ReturnFiles, call.ReturnBytes)
	}
	o := classify(facts)
	res.Status, res.ExitCode, res.Signal = o.status, o.code, o.signal
	if end.noStatus {
		res.Status, res.ExitCode, res.Signal = StatusError, ExitBoxer, ""
	}
	if res.SessionEnded == "" && !end.alive {
		res.SessionEnded = r.checkAlive(ctx, s)
		if res.SessionEnded == "" && end.wireEnded {
			// containerd may not have seen the driver's exit yet.
			_ = r.endSession(ctx, s.c, reaper.EndInterpreter)
			res.SessionEnded = reaper.EndInterpreter
		}
		if res.SessionEnded == reaper.EndInterpreter && facts.oomKills > 0 && !facts.timedOut {
			res.Status, res.ExitCode, res.Signal = StatusOOM, ExitOOM, "SIGKILL"
		} else if res.SessionEnded != "" && end.noStatus {
			res.Error = fmt.Sprintf("the session ended: %s", EndText(res.SessionEnded))
		}
	}
	if facts.interrupted {
		return res, ErrInterrupted
	}
	return res, nil
}

// callEnd is how a call ended.
type callEnd struct {
	facts          exitFacts
	started, ended time.Time
	// sessionEnded says why the call ended the session, if it did; alive,
	// that the session is known to live on (its interpreter answered);
	// noStatus, that there is no exit status of the call's code (it did
	// not run, or its interpreter did not answer).
	sessionEnded    string
	alive, noStatus bool
	// wireEnded: the driver's end of the wire is closed, which it is
	// only once it has exited (or a call closed it).
	wireEnded bool
}

// wireCall runs call n of an interpreted session through its wire: the
// driver runs /code/name with the call's streams and answers with its
// status.
func (r *Runner) wireCall(ctx context.Context, s *liveSession, n int, name string, call SessionCall, stdout, stderr io.Writer) (callEnd, error) {
	var end callEnd
	end.started = time.Now()
	end.ended, end.noStatus = end.started, true
	w, err := openWire(s.runDir)
	if errors.Is(err, errWireGone) {
		end.wireEnded = true
		return end, nil // checkAlive says why
	} else if err != nil {
		return end, err
	}
	defer w.Close()
	if err := w.send("run", n, []byte(name)); err != nil {
		return end, nil
	}
	go func() {
		if err := w.sendStdin(n, call.Stdin); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, os.ErrClosed) {
			log.G(ctx).WithError(err).Debug("sending a call's stdin")
		}
	}()
	defer w.stopSending()
	frames, done := make(chan frame), make(chan struct{})
	defer close(done)
	go w.receiveAll(frames, done)
	// wait passes the call's output on until its exit frame, the end of
	// the wire, or stop.
	wait := func(stop <-chan time.Time, cancel <-chan struct{}) (status uint32, why error) {
		for {
			select {
			case f := <-frames:
				switch {
				case f.err != nil:
					return 0, f.err
				case f.call != n:
					// A caller before this one died during its call.
				case f.kind == "out":
					_, _ = stdout.Write(f.data)
				case f.kind == "err":
					_, _ = stderr.Write(f.data)
				case f.kind == "exit":
					code, err := strconv.ParseUint(string(f.data), 10, 8)
					if err != nil {
						return 0, errWireBroken
					}
					return uint32(code), nil
				default:
					return 0, errWireBroken
				}
			case <-stop:
				return 0, errTimedOut
			case <-cancel:
				return 0, ErrInterrupted
			}
		}
	}
	timer := time.NewTimer(call.Timeout)
	defer timer.Stop()
	status, why := wait(timer.C, ctx.Done())
	if errors.Is(why, errTimedOut) || errors.Is(why, ErrInterrupted) {
		end.facts.timedOut, end.facts.interrupted = errors.Is(why, errTimedOut), errors.Is(why, ErrInterrupted)
		if err := r.interruptIn(ctx, s); err != nil {
			log.G(ctx).WithError(err).Warn("interrupting call")
		}
		status, why = wait(time.After(interruptGrace), nil)
		if errors.Is(why, errTimedOut) {
			_ = r.endSession(ctx, s.c, reaper.EndStuck)
			end.sessionEnded, status, why = reaper.EndStuck, 255, nil
		}
	}
	end.ended = time.Now()
	switch {
	case why == nil:
		end.facts.status, end.noStatus = status, false
		end.alive = end.sessionEnded == ""
	case errors.Is(why, errWireBroken):
		_ = r.endSession(ctx, s.c, reaper.EndWireBroken)
		end.sessionEnded = reaper.EndWireBroken
	default:
		// The driver's end closed (it exited, or was killed: the
		// memory limit, a kill from inside): checkAlive says why.
		end.facts.status, end.wireEnded = 255, true
	}
	return end, nil
}

// errTimedOut: a call's timeout passed.
var errTimedOut = errors.New("timed out")

// execCall runs call n of a session as a process of its own in the
// sandbox (bash, javascript, typescript: only files persist).
func (r *Runner) execCall(ctx context.Context, s *liveSession, n int, p Preset, name string, call SessionCall, stdout, stderr io.Writer) (callEnd, error) {
	var end callEnd
	opCtx := context.WithoutCancel(ctx)
	task, err := s.loadTask(opCtx)
	if err != nil {
		return end, err
	}
	spec, err := s.c.Spec(opCtx)
	if err != nil {
		return end, fmt.Errorf("reading session spec: %w", err)
	}
	proc := *spec.Process
	proc.Args = append([]string{"/bin/sh", "-c", `echo $$ > ` + callPid + ` && exec "$@"`, "sh"}, append(p.Command, path.Join("/code", name))...)
	pr, pw := io.Pipe()
	stdin := &eofReader{r: pr, eof: make(chan struct{})}
	defer pw.Close()
	execID := "call-" + strconv.Itoa(n)
	process, err := task.Exec(opCtx, execID, &proc, cio.NewCreator(cio.WithStreams(stdin, stdout, stderr), cio.WithFIFODir(s.runDir)))
	if err != nil {
		return end, &runtimeError{step: "starting call", err: err}
	}
	defer func() {
		if _, err := process.Delete(opCtx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			log.G(ctx).WithError(err).Debug("deleting call process")
		}
	}()
	statusC, err := process.Wait(opCtx)
	if err != nil {
		return end, fmt.Errorf("waiting on call: %w", err)
	}
	end.started = time.Now()
	if err := process.Start(opCtx); err != nil {
		return end, &runtimeError{step: "starting call", err: err}
	}
	go func() {
		if call.Stdin != nil {
			_, _ = io.Copy(pw, call.Stdin)
		}
		pw.Close()
	}()
	go func() {
		<-stdin.eof
		if err := process.CloseIO(opCtx, containerd.WithStdinCloser); err != nil && !errdefs.IsNotFound(err) {
			log.G(ctx).WithError(err).Debug("closing stdin")
		}
	}()
	var status containerd.ExitStatus
	timer := time.NewTimer(call.Timeout)
	defer timer.Stop()
	select {
	case status = <-statusC:
	case <-timer.C:
		end.facts.timedOut = true
	case <-ctx.Done():
		end.facts.interrupted = true
	}
	if end.facts.timedOut || end.facts.interrupted {
		status, end.sessionEnded = r.interrupt(ctx, s, process, statusC)
	}
	end.ended = time.Now()
	if t := status.ExitTime(); !t.IsZero() && t.After(end.started) {
		end.ended = t
	}
	end.facts.status = status.ExitCode()
	r.drainCall(process)
	return end, nil
}

// interrupt stops a call at its timeout (or its caller's end): the program
// is killed. If the call still does not end, the session is ended. It
// returns the call's exit status and why the session ended, if it did.
func (r *Runner) interrupt(ctx context.Context, s *liveSession, process containerd.Process, statusC <-chan containerd.ExitStatus) (containerd.ExitStatus, string) {
	opCtx := context.WithoutCancel(ctx)
	if err := process.Kill(opCtx, syscall.SIGKILL); err != nil && !errdefs.IsNotFound(err) {
		log.G(ctx).WithError(err).Debug("killing call")
	}
	// Under runsc the kill reaches runsc's exec process, not the program.
	if err := s.execIn(opCtx, []string{"/bin/sh", "-c", `kill -KILL "$(cat ` + callPid + `)"`}); err != nil {
		log.G(ctx).WithError(err).Warn("interrupting call")
	}
	select {
	case st := <-statusC:
		return st, ""
	case <-time.After(interruptGrace):
	}
	_ = r.endSession(ctx, s.c, reaper.EndStuck)
	select {
	case st := <-statusC:
		return st, reaper.EndStuck
	case <-time.After(reaper.CleanupTimeout):
		return *containerd.NewExitStatus(255, time.Now(), nil), reaper.EndStuck
	}
}

// interruptIn sends the session's interpreter SIGINT, from inside the
// sandbox: it has interruptGrace to come back from the call's code.
func (r *Runner) interruptIn(ctx context.Context, s *liveSession) error {
	return s.execIn(context.WithoutCancel(ctx), []string{"/bin/sh", "-c", `kill -INT "$(cat ` + driverPid + `)"`})
}

// loadTask loads the session's task, once.
func (s *liveSession) loadTask(ctx context.Context) (containerd.Task, error) {
	if s.task == nil {
		task, err := s.c.Task(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("loading session task: %w", err)
		}
		s.task = task
	}
	return s.task, nil
}

// execIn runs a short command in the session's sandbox, as its user, and
// waits for it (at most a few seconds).
func (s *liveSession) execIn(ctx context.Context, args []string) error {
	task, err := s.loadTask(ctx)
	if err != nil {
		return err
	}
	spec, err := s.c.Spec(ctx)
	if err != nil {
		return err
	}
	proc := *spec.Process
	proc.Args = args
	p, err := task.Exec(ctx, "interrupt-"+strconv.FormatInt(time.Now().UnixNano(), 36), &proc, cio.NullIO)
	if err != nil {
		return err
	}
	defer p.Delete(ctx, containerd.WithProcessKill)
	statusC, err := p.Wait(ctx)
	if err != nil {
		return err
	}
	if err := p.Start(ctx); err != nil {
		return err
	}
	select {
	case <-statusC:
	case <-time.After(5 * time.Second):
	}
	return nil
}

// drainCall waits for a call's output, as sandbox.drain does for a run.
func (r *Runner) drainCall(process containerd.Process) {
	done := make(chan struct{})
	go func() {
		process.IO().Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(drainTimeout):
		process.IO().Cancel()
	}
}

// checkAlive ends the session if a call ended its interpreter or its
// sandbox, and says why.
func (r *Runner) checkAlive(ctx context.Context, s *liveSession) string {
	reason := ""
	task, err := s.loadTask(ctx)
	if err == nil {
		var st containerd.Status
		if st, err = task.Status(ctx); err == nil && st.Status != containerd.Running {
			err = errors.New("not running")
		}
	}
	if err != nil {
		reason = reaper.EndExited
	} else if interpreted(s.rec.Request.Lang) {
		driver, err := task.LoadProcess(ctx, driverExecID, nil)
		if err == nil {
			var st containerd.Status
			if st, err = driver.Status(ctx); err == nil && st.Status != containerd.Running {
				err = errors.New("exited")
			}
		}
		if err != nil {
			reason = reaper.EndInterpreter
		}
	}
	if reason != "" {
		_ = r.endSession(ctx, s.c, reason)
	}
	return reason
}

// sessionWorkspace opens session id's workspace for caller.
func (r *Runner) sessionWorkspace(ctx context.Context, id, caller string) (*os.Root, Request, error) {
	s, err := r.loadSession(ctx, id, caller, false)
	if err != nil {
		return nil, Request{}, err
	}
	root, err := os.OpenRoot(reaper.WorkspaceDir(s.runDir))
	if err != nil {
		return nil, Request{}, fmt.Errorf("opening session workspace: %w", err)
	}
	s.touch(ctx, time.Now())
	return root, s.rec.Request, nil
}

// checkSessionPath refuses a path that is not relative to /workspace.
func checkSessionPath(rel string) error {
	if rel == "" || !filepath.IsLocal(rel) || strings.ContainsRune(rel, 0) {
		return fieldErr(FieldFiles, "%q must be a path relative to /workspace", rel)
	}
	return nil
}

// ReadSessionFile returns a regular file of session id's workspace, of at
// most limit bytes. Every read goes through the workspace's root: a
// sandbox that swaps a directory for a symlink meanwhile cannot lead it out.
func (r *Runner) ReadSessionFile(ctx context.Context, id, caller, rel string, limit int64) ([]byte, error) {
	if err := checkSessionPath(rel); err != nil {
		return nil, err
	}
	root, _, err := r.sessionWorkspace(ctx, id, caller)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(rel, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, ErrFileNotFound
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, ErrFileNotFound
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	if int64(len(data)) > limit {
		return nil, fieldErr(FieldFiles, "%s is larger than %d bytes, the most that can be read at once", rel, limit)
	}
	return data, nil
}

// WriteSessionFile writes a file into session id's workspace, owned by
// the sandbox's user.
func (r *Runner) WriteSessionFile(ctx context.Context, id, caller, rel string, data []byte) error {
	if err := checkSessionPath(rel); err != nil {
		return err
	}
	root, req, err := r.sessionWorkspace(ctx, id, caller)
	if err != nil {
		return err
	}
	defer root.Close()
	return writeFilesRoot(root, map[string][]byte{rel: data}, req.UID, req.GID)
}

// CopyToSession copies a host file or directory to dest in session id's
// workspace (a directory's contents go into dest).
func (r *Runner) CopyToSession(ctx context.Context, id, src, dest string) error {
	if dest != "." {
		if err := checkSessionPath(dest); err != nil {
			return err
		}
	}
	root, req, err := r.sessionWorkspace(ctx, id, "")
	if err != nil {
		return err
	}
	defer root.Close()
	st, err := os.Stat(src)
	if err != nil {
		return fieldErr(FieldCopyIn, "%s: %v", src, err)
	}
	if !st.IsDir() {
		if !st.Mode().IsRegular() {
			return fieldErr(FieldCopyIn, "%s is not a regular file or a directory", src)
		}
		if st.Size() > req.TmpBytes {
			return fieldErr(FieldCopyIn, "%s holds %d bytes, more than the workspace's %d", src, st.Size(), req.TmpBytes)
		}
		if dir := filepath.Dir(dest); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("copying in: %w", err)
			}
		}
		if err := copyFile(root, dest, src, st.Mode().Perm()); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("copying in %s: %w", dest, err)
		} else if errors.Is(err, os.ErrExist) {
			return fieldErr(FieldCopyIn, "%s exists in the session: remove it first", dest)
		}
		return root.Lchown(dest, int(req.UID), int(req.GID))
	}
	if err := checkTree(src, req.TmpBytes); err != nil {
		return err
	}
	if dest != "." {
		if err := root.MkdirAll(dest, 0o755); err != nil {
			return fmt.Errorf("copying in: %w", err)
		}
		_ = root.Lchown(dest, int(req.UID), int(req.GID))
	}
	sub, err := root.OpenRoot(dest)
	if err != nil {
		return fmt.Errorf("copying in: %w", err)
	}
	defer sub.Close()
	return copyInto(src, sub, req.UID, req.GID)
}

// CopyFromSession copies src (a file or directory of session id's
// workspace) to the host path dst, with copy-out's safety: regular files
// and directories only, at most the workspace's size.
func (r *Runner) CopyFromSession(ctx context.Context, id, src, dst string) ([]File, int, error) {
	if src != "." {
		if err := checkSessionPath(src); err != nil {
			return nil, 0, err
		}
	}
	root, req, err := r.sessionWorkspace(ctx, id, "")
	if err != nil {
		return nil, 0, err
	}
	defer root.Close()
	st, err := root.Lstat(src)
	if err != nil {
		return nil, 0, ErrFileNotFound
	}
	if st.Mode().IsRegular() {
		in, err := root.OpenFile(src, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		if err != nil {
			return nil, 0, ErrFileNotFound
		}
		defer in.Close()
		if st, err := in.Stat(); err != nil || !st.Mode().IsRegular() {
			return nil, 0, ErrFileNotFound
		}
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, 0, fmt.Errorf("copying out: %w", err)
		}
		n, err := io.Copy(out, io.LimitReader(in, req.TmpBytes))
		if err := errors.Join(err, out.Close()); err != nil {
			return nil, 0, fmt.Errorf("copying out: %w", err)
		}
		return []File{{Path: src, Size: n}}, 0, nil
	}
	if !st.IsDir() {
		return nil, 0, ErrFileNotFound
	}
	sub, err := root.OpenRoot(src)
	if err != nil {
		return nil, 0, fmt.Errorf("copying out: %w", err)
	}
	defer sub.Close()
	return copyOutOf(sub, dst, req.TmpBytes)
}
