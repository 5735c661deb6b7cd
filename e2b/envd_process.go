package e2b

// envd's process service on a sandbox's processes: the session keeper's
// processes (runner.StartProcess and the calls beside it) in E2B's words.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"connectrpc.com/connect"

	pb "github.com/boxer-dev/boxer/e2b/envdspec/process"
	"github.com/boxer-dev/boxer/runner"
)

// processService serves process.Process.
type processService struct {
	s *Server
}

// Keep-alives on an output stream: as often as the client's
// Keepalive-Ping-Interval header asks (seconds), within these bounds.
const (
	keepaliveHeader  = "Keepalive-Ping-Interval"
	keepaliveDefault = 50 * time.Second
	keepaliveMin     = time.Second
)

// Start starts a command and streams its events: start with its PID,
// its output, keep-alives, its end. The command runs on when the stream
// ends first, as under E2B's envd.
func (p *processService) Start(ctx context.Context, req *connect.Request[pb.StartRequest], stream *connect.ServerStream[pb.StartResponse]) error {
	if err := rpcUser(req.Header()); err != nil {
		return err
	}
	sb := sandboxFrom(ctx)
	preq, err := processRequest(sb, req.Msg)
	if err != nil {
		return err
	}
	// The stream is the caller's from before its process starts: one
	// refused starts nothing.
	done, err := p.s.runner.HoldStream(sb.Caller)
	if err != nil {
		return rpcError(err)
	}
	defer done()
	send := func(ev *pb.ProcessEvent) error { return stream.Send(&pb.StartResponse{Event: ev}) }
	// Started and followed in one request to the sandbox's keeper.
	return p.follow(ctx, sb, keepaliveEvery(req.Header().Get(keepaliveHeader)), send, func(ctx context.Context, fn func(runner.ProcessEvent) error) error {
		return p.s.runner.RunProcess(ctx, sb.ID, sb.Caller, preq, fn)
	})
}

// processRequest is a StartRequest as boxer runs it: the sandbox's env
// vars and then the request's, in the home unless it names a directory.
func processRequest(sb *sandbox, m *pb.StartRequest) (runner.ProcessRequest, error) {
	cfg := m.GetProcess()
	if cfg.GetCmd() == "" {
		return runner.ProcessRequest{}, connect.NewError(connect.CodeInvalidArgument, errors.New("process.cmd is required: the command to run"))
	}
	preq := runner.ProcessRequest{
		Args: append([]string{cfg.GetCmd()}, cfg.GetArgs()...),
		Env:  append(envList(sb.Env), envList(cfg.GetEnvs())...),
		Cwd:  envdHome,
		Tag:  m.GetTag(),
		// E2B's envd opens stdin unless told not to.
		Stdin: m.Stdin == nil || m.GetStdin(),
	}
	if cfg.Cwd != nil {
		cwd, err := rpcPathAnywhere(cfg.GetCwd())
		if err != nil {
			return runner.ProcessRequest{}, err
		}
		preq.Cwd = cwd
	}
	if m.Pty != nil {
		size := termSize(m.GetPty().GetSize())
		preq.PTY = &size
	}
	return preq, nil
}

// termSize is a terminal's size as E2B's envd takes it: a side of 0 (a
// client whose own terminal says no size, as script(1) or a CI runner
// gives E2B's CLI) is the size a terminal has by default, 80 columns by
// 24 rows, where E2B's envd sets the kernel's 0 that programs read as
// unknown and take the same way.
func termSize(size *pb.PTY_Size) runner.TermSize {
	ts := runner.TermSize{Cols: size.GetCols(), Rows: size.GetRows()}
	if ts.Cols == 0 {
		ts.Cols = 80
	}
	if ts.Rows == 0 {
		ts.Rows = 24
	}
	return ts
}

// rpcPathAnywhere resolves a working directory: "~" and relative ones
// from the home; any absolute directory of the sandbox may be one.
func rpcPathAnywhere(p string) (string, error) {
	if abs, err := sandboxPath(p); err == nil {
		return abs, nil
	}
	if !strings.HasPrefix(p, "/") {
		return "", connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("cwd %q: use an absolute path, or one relative to %s", p, envdHome))
	}
	return p, nil
}

// envList is env as NAME=value entries, sorted.
func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// keepaliveEvery reads a Keepalive-Ping-Interval header.
func keepaliveEvery(h string) time.Duration {
	n, err := strconv.Atoi(h)
	if err != nil || n <= 0 {
		return keepaliveDefault
	}
	return max(time.Duration(n)*time.Second, keepaliveMin)
}

// follow streams a process's events through send, from the start of
// what its ring holds (attach calls fn with them, the first with Start):
// a start event, its output, keep-alives while it is quiet, and its end.
func (p *processService) follow(ctx context.Context, sb *sandbox, every time.Duration, send func(*pb.ProcessEvent) error, attach func(context.Context, func(runner.ProcessEvent) error) error) error {
	var mu sync.Mutex
	locked := func(ev *pb.ProcessEvent) error {
		mu.Lock()
		defer mu.Unlock()
		return send(ev)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	keepalive := func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if locked(&pb.ProcessEvent{Event: &pb.ProcessEvent_Keepalive{Keepalive: &pb.ProcessEvent_KeepAlive{}}}) != nil {
					cancel()
					return
				}
			}
		}
	}
	started := false
	err := attach(ctx, func(ev runner.ProcessEvent) error {
		switch {
		case ev.Start != nil && !started:
			started = true
			if err := locked(&pb.ProcessEvent{Event: &pb.ProcessEvent_Start{Start: &pb.ProcessEvent_StartEvent{Pid: uint32(ev.Start.PID)}}}); err != nil {
				return err
			}
			go keepalive()
		case ev.End != nil:
			if p.s.gone(ctx, sb, *ev.End) {
				// As E2B's: the SDKs raise a killed sandbox's
				// unavailable as a TimeoutError, not an exit.
				return killedUnder(sb)
			}
			return locked(&pb.ProcessEvent{Event: &pb.ProcessEvent_End{End: endEvent(*ev.End)}})
		case len(ev.Data) > 0:
			return locked(&pb.ProcessEvent{Event: &pb.ProcessEvent_Data{Data: dataEvent(ev.Stream, ev.Data)}})
		}
		return nil
	})
	if err != nil && ctx.Err() == nil && sb.killed.Load() {
		// Killed before the process's end reached the stream (its
		// keeper's connection cut, say): the same answer as a death seen
		// in it, not an internal error.
		return killedUnder(sb)
	}
	return rpcError(err)
}

// killedUnder is what a command's stream answers when its sandbox was
// killed or reached its end under it: unavailable, which the SDKs raise
// as a TimeoutError, as E2B's envd does.
func killedUnder(sb *sandbox) error {
	return connect.NewError(connect.CodeUnavailable, fmt.Errorf("the sandbox was killed or reached its end of life while the command ran (sandbox %s)", sb.ID))
}

func dataEvent(stream string, data []byte) *pb.ProcessEvent_DataEvent {
	switch stream {
	case runner.StreamStderr:
		return &pb.ProcessEvent_DataEvent{Output: &pb.ProcessEvent_DataEvent_Stderr{Stderr: data}}
	case runner.StreamPTY:
		return &pb.ProcessEvent_DataEvent{Output: &pb.ProcessEvent_DataEvent_Pty{Pty: data}}
	}
	return &pb.ProcessEvent_DataEvent{Output: &pb.ProcessEvent_DataEvent_Stdout{Stdout: data}}
}

// endEvent is a process's end as envd tells it (Go's os.ProcessState):
// status "exit status N", and error the same when N is not 0, which the
// SDKs raise as CommandExitError. A death by signal N is exit code 128+N,
// as the sandbox's shell reports it.
func endEvent(info runner.ProcessInfo) *pb.ProcessEvent_EndEvent {
	code := -1
	if info.ExitCode != nil {
		code = *info.ExitCode
	}
	end := &pb.ProcessEvent_EndEvent{ExitCode: int32(code), Exited: true, Status: "exit status " + strconv.Itoa(code)}
	switch {
	case info.Error != "":
		end.Exited, end.Status, end.Error = false, "error", &info.Error
	case code != 0:
		end.Error = &end.Status
	}
	return end
}

// Connect follows a running process's output: what its ring still holds
// from its start, then live.
func (p *processService) Connect(ctx context.Context, req *connect.Request[pb.ConnectRequest], stream *connect.ServerStream[pb.ConnectResponse]) error {
	sb := sandboxFrom(ctx)
	info, err := p.find(ctx, sb, req.Msg.GetProcess(), true)
	if err != nil {
		return err
	}
	done, err := p.s.runner.HoldStream(sb.Caller)
	if err != nil {
		return rpcError(err)
	}
	defer done()
	send := func(ev *pb.ProcessEvent) error { return stream.Send(&pb.ConnectResponse{Event: ev}) }
	return p.follow(ctx, sb, keepaliveEvery(req.Header().Get(keepaliveHeader)), send, func(ctx context.Context, fn func(runner.ProcessEvent) error) error {
		return p.s.runner.AttachProcess(ctx, sb.ID, sb.Caller, strconv.Itoa(info.ID), 0, fn)
	})
}

// List lists the running processes, as envd does (an ended one is gone).
func (p *processService) List(ctx context.Context, req *connect.Request[pb.ListRequest]) (*connect.Response[pb.ListResponse], error) {
	sb := sandboxFrom(ctx)
	procs, err := p.s.runner.Processes(ctx, sb.ID, sb.Caller)
	if err != nil {
		return nil, rpcError(err)
	}
	out := &pb.ListResponse{}
	for _, info := range procs {
		if !info.Running {
			continue
		}
		cfg := &pb.ProcessConfig{Envs: map[string]string{}, Cwd: &info.Cwd}
		if len(info.Args) > 0 {
			cfg.Cmd, cfg.Args = info.Args[0], info.Args[1:]
		}
		for _, kv := range info.Env {
			k, v, _ := strings.Cut(kv, "=")
			cfg.Envs[k] = v
		}
		pi := &pb.ProcessInfo{Config: cfg, Pid: uint32(info.PID)}
		if info.Tag != "" {
			pi.Tag = &info.Tag
		}
		out.Processes = append(out.Processes, pi)
	}
	return connect.NewResponse(out), nil
}

// find resolves a selector to one of the sandbox's processes: by PID in
// the sandbox (a running one before an ended one that had the same), or
// by tag (the newest). running: an ended one is not found, as under
// envd, which forgets a process at its end.
func (p *processService) find(ctx context.Context, sb *sandbox, sel *pb.ProcessSelector, running bool) (runner.ProcessInfo, error) {
	procs, err := p.s.runner.Processes(ctx, sb.ID, sb.Caller)
	if err != nil {
		return runner.ProcessInfo{}, rpcError(err)
	}
	var what string
	match := func(runner.ProcessInfo) bool { return false }
	switch s := sel.GetSelector().(type) {
	case *pb.ProcessSelector_Pid:
		what = "pid " + strconv.Itoa(int(s.Pid))
		match = func(i runner.ProcessInfo) bool { return i.PID == int(s.Pid) }
	case *pb.ProcessSelector_Tag:
		what = "tag " + strconv.Quote(s.Tag)
		match = func(i runner.ProcessInfo) bool { return i.Tag == s.Tag }
	default:
		return runner.ProcessInfo{}, connect.NewError(connect.CodeInvalidArgument, errors.New("process is required: a pid or a tag"))
	}
	var found *runner.ProcessInfo
	for i := range procs {
		pi := &procs[i]
		if !match(*pi) {
			continue
		}
		if found == nil || (pi.Running && !found.Running) || (pi.Running == found.Running && pi.ID > found.ID) {
			found = pi
		}
	}
	switch {
	case found == nil:
		return runner.ProcessInfo{}, connect.NewError(connect.CodeNotFound, fmt.Errorf("no process with %s in the sandbox", what))
	case running && !found.Running:
		return runner.ProcessInfo{}, connect.NewError(connect.CodeNotFound, fmt.Errorf("the process with %s has ended (exit code %d)", what, deref(found.ExitCode)))
	}
	return *found, nil
}

func deref(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

// SendInput writes to a process's stdin or terminal.
func (p *processService) SendInput(ctx context.Context, req *connect.Request[pb.SendInputRequest]) (*connect.Response[pb.SendInputResponse], error) {
	sb := sandboxFrom(ctx)
	info, err := p.find(ctx, sb, req.Msg.GetProcess(), true)
	if err != nil {
		return nil, err
	}
	if err := p.input(ctx, sb, info, req.Msg.GetInput()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&pb.SendInputResponse{}), nil
}

func (p *processService) input(ctx context.Context, sb *sandbox, info runner.ProcessInfo, in *pb.ProcessInput) error {
	var data []byte
	switch v := in.GetInput().(type) {
	case *pb.ProcessInput_Stdin:
		data = v.Stdin
	case *pb.ProcessInput_Pty:
		data = v.Pty
	default:
		return connect.NewError(connect.CodeInvalidArgument, errors.New("input is required: stdin or pty bytes"))
	}
	return rpcError(p.s.runner.SendStdin(ctx, sb.ID, sb.Caller, strconv.Itoa(info.ID), strings.NewReader(string(data)), false))
}

// StreamInput writes a stream of input to one process, in order: a start
// event naming it, then data events.
func (p *processService) StreamInput(ctx context.Context, stream *connect.ClientStream[pb.StreamInputRequest]) (*connect.Response[pb.StreamInputResponse], error) {
	sb := sandboxFrom(ctx)
	var info *runner.ProcessInfo
	for stream.Receive() {
		switch ev := stream.Msg().GetEvent().(type) {
		case *pb.StreamInputRequest_Start:
			found, err := p.find(ctx, sb, ev.Start.GetProcess(), true)
			if err != nil {
				return nil, err
			}
			info = &found
		case *pb.StreamInputRequest_Data:
			if info == nil {
				return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("the input stream must begin with a start event naming the process"))
			}
			if err := p.input(ctx, sb, *info, ev.Data.GetInput()); err != nil {
				return nil, err
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, rpcError(err)
	}
	return connect.NewResponse(&pb.StreamInputResponse{}), nil
}

// SendSignal sends SIGTERM or SIGKILL to a process (and, for SIGKILL,
// to what it started).
func (p *processService) SendSignal(ctx context.Context, req *connect.Request[pb.SendSignalRequest]) (*connect.Response[pb.SendSignalResponse], error) {
	sb := sandboxFrom(ctx)
	var sig syscall.Signal
	switch req.Msg.GetSignal() {
	case pb.Signal_SIGNAL_SIGTERM:
		sig = syscall.SIGTERM
	case pb.Signal_SIGNAL_SIGKILL:
		sig = syscall.SIGKILL
	default:
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("signal must be SIGNAL_SIGTERM or SIGNAL_SIGKILL"))
	}
	info, err := p.find(ctx, sb, req.Msg.GetProcess(), true)
	if err != nil {
		return nil, err
	}
	if err := p.s.runner.SignalProcess(ctx, sb.ID, sb.Caller, strconv.Itoa(info.ID), sig); err != nil {
		var fe *runner.FieldError
		if errors.As(err, &fe) && fe.Field == runner.FieldSignal {
			// It ended meanwhile.
			return nil, connect.NewError(connect.CodeNotFound, err)
		}
		return nil, rpcError(err)
	}
	return connect.NewResponse(&pb.SendSignalResponse{}), nil
}

// Update resizes a process's terminal.
func (p *processService) Update(ctx context.Context, req *connect.Request[pb.UpdateRequest]) (*connect.Response[pb.UpdateResponse], error) {
	sb := sandboxFrom(ctx)
	if req.Msg.Pty == nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("pty is required: the terminal's new size (the one thing Update changes)"))
	}
	info, err := p.find(ctx, sb, req.Msg.GetProcess(), true)
	if err != nil {
		return nil, err
	}
	if !info.PTY {
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("process %d has no terminal to resize: start it with a pty", info.PID))
	}
	if err := p.s.runner.ResizeProcess(ctx, sb.ID, sb.Caller, strconv.Itoa(info.ID), termSize(req.Msg.GetPty().GetSize())); err != nil {
		return nil, rpcError(err)
	}
	return connect.NewResponse(&pb.UpdateResponse{}), nil
}

// CloseStdin closes a process's stdin: it reads end of file.
func (p *processService) CloseStdin(ctx context.Context, req *connect.Request[pb.CloseStdinRequest]) (*connect.Response[pb.CloseStdinResponse], error) {
	sb := sandboxFrom(ctx)
	info, err := p.find(ctx, sb, req.Msg.GetProcess(), true)
	if err != nil {
		return nil, err
	}
	if info.PTY {
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("process %d runs on a terminal: send Ctrl-D (0x04) as its input instead", info.PID))
	}
	if err := p.s.runner.SendStdin(ctx, sb.ID, sb.Caller, strconv.Itoa(info.ID), strings.NewReader(""), true); err != nil {
		return nil, rpcError(err)
	}
	return connect.NewResponse(&pb.CloseStdinResponse{}), nil
}

// gone says whether a process that ended with end was ended by its
// sandbox's end (a kill, its timeout) rather than on its own: only a
// SIGKILL's status is looked into.
func (s *Server) gone(ctx context.Context, sb *sandbox, end runner.ProcessInfo) bool {
	if end.ExitCode == nil || *end.ExitCode != 128+9 {
		return false
	}
	if sb.killed.Load() {
		return true
	}
	_, sess, err := s.find(context.WithoutCancel(ctx), sb.Caller, sb.ID)
	return errors.Is(err, runner.ErrSessionNotFound) || err == nil && !sess.ExpiresAt.After(time.Now())
}
