package e2b

// envd's filesystem service on a sandbox's files: runner's session files
// (stat, list, mkdir, move, remove) and its directory watches, in E2B's
// words.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strconv"
	"sync"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/boxer-dev/boxer/e2b/envdspec/filesystem"
	"github.com/boxer-dev/boxer/runner"
)

// filesystemService serves filesystem.Filesystem.
type filesystemService struct {
	s *Server

	mu sync.Mutex
	// watchers are the watches of CreateWatcher, by ID.
	watchers map[string]*watcher
}

// Bounds of the watches made by CreateWatcher, whose events wait to be
// fetched.
const (
	maxWatchers       = 64
	maxWatcherEvents  = 10000
	watcherIdleExpiry = 10 * time.Minute
)

// watcher is a watch made by CreateWatcher: its events, kept until
// fetched.
type watcher struct {
	sandbox string
	cancel  context.CancelFunc
	mu      sync.Mutex
	events  []*pb.FilesystemEvent
	err     error
	used    time.Time
}

// entryInfo is a runner entry as envd describes one. E2B names the
// sandbox's user "user" (boxer's runs as uid runner.DefaultUID).
func entryInfo(e runner.FileEntry) *pb.EntryInfo {
	info := &pb.EntryInfo{
		Name: e.Name, Path: e.Path, Size: e.Size, Mode: e.Mode, Permissions: e.Permissions,
		Owner: ownerName(e.UID), Group: ownerName(e.GID), ModifiedTime: timestamppb.New(e.ModifiedAt),
		Metadata: e.Metadata,
	}
	switch e.Type {
	case runner.FileTypeFile:
		info.Type = pb.FileType_FILE_TYPE_FILE
	case runner.FileTypeDir:
		info.Type = pb.FileType_FILE_TYPE_DIRECTORY
	case runner.FileTypeSymlink:
		info.Type = pb.FileType_FILE_TYPE_SYMLINK
		// As E2B's envd: the target as an absolute path, a relative
		// link's taken from the link's directory.
		target := e.SymlinkTarget
		if target != "" && !path.IsAbs(target) {
			target = path.Join(path.Dir(e.Path), target)
		}
		info.SymlinkTarget = &target
	}
	return info
}

func ownerName(id uint32) string {
	switch id {
	case 0:
		return "root"
	case runner.DefaultUID:
		return envdUser
	}
	return strconv.FormatUint(uint64(id), 10)
}

// fsRPCError is rpcError for a file operation: a path refused for what
// it names (not a regular file, too long) is the request's fault,
// invalid_argument; one a symlink leads out of is not_found.
func fsRPCError(err error) error {
	var pe *runner.PathError
	if errors.As(err, &pe) && !errors.Is(err, runner.ErrLeadsOut) {
		return connect.NewError(connect.CodeInvalidArgument, err)
	}
	return rpcError(err)
}

// Stat describes a path; a symlink is described, not followed.
func (f *filesystemService) Stat(ctx context.Context, req *connect.Request[pb.StatRequest]) (*connect.Response[pb.StatResponse], error) {
	sb, p, err := fsRequest(ctx, req.Header(), req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	e, err := f.s.runner.StatSessionPath(ctx, sb.ID, sb.Caller, p)
	if err != nil {
		return nil, fsRPCError(err)
	}
	return connect.NewResponse(&pb.StatResponse{Entry: entryInfo(e)}), nil
}

// fsRequest checks a filesystem request's user and resolves its path.
func fsRequest(ctx context.Context, h http.Header, p string) (*sandbox, string, error) {
	if err := rpcUser(h); err != nil {
		return nil, "", err
	}
	abs, err := rpcPath(p)
	if err != nil {
		return nil, "", err
	}
	return sandboxFrom(ctx), abs, nil
}

// MakeDir makes a directory and its parents; already_exists when it was
// there (the SDK's makeDir answers false).
func (f *filesystemService) MakeDir(ctx context.Context, req *connect.Request[pb.MakeDirRequest]) (*connect.Response[pb.MakeDirResponse], error) {
	sb, p, err := fsRequest(ctx, req.Header(), req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	e, made, err := f.s.runner.MakeSessionDir(ctx, sb.ID, sb.Caller, p)
	if err != nil {
		return nil, fsRPCError(err)
	}
	if !made {
		return nil, connect.NewError(connect.CodeAlreadyExists, fmt.Errorf("directory %s exists already", p))
	}
	return connect.NewResponse(&pb.MakeDirResponse{Entry: entryInfo(e)}), nil
}

// Move renames a file or directory.
func (f *filesystemService) Move(ctx context.Context, req *connect.Request[pb.MoveRequest]) (*connect.Response[pb.MoveResponse], error) {
	sb, src, err := fsRequest(ctx, req.Header(), req.Msg.GetSource())
	if err != nil {
		return nil, err
	}
	dst, err := rpcPath(req.Msg.GetDestination())
	if err != nil {
		return nil, err
	}
	e, err := f.s.runner.MoveSessionPath(ctx, sb.ID, sb.Caller, src, dst)
	if err != nil {
		return nil, fsRPCError(err)
	}
	return connect.NewResponse(&pb.MoveResponse{Entry: entryInfo(e)}), nil
}

// ListDir lists a directory down to depth levels (0 is 1, as envd reads
// it).
func (f *filesystemService) ListDir(ctx context.Context, req *connect.Request[pb.ListDirRequest]) (*connect.Response[pb.ListDirResponse], error) {
	sb, p, err := fsRequest(ctx, req.Header(), req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	depth := max(int(req.Msg.GetDepth()), 1)
	entries, err := f.s.runner.ListSessionDir(ctx, sb.ID, sb.Caller, p, depth)
	if err != nil {
		return nil, fsRPCError(err)
	}
	out := &pb.ListDirResponse{}
	for _, e := range entries {
		out.Entries = append(out.Entries, entryInfo(e))
	}
	return connect.NewResponse(out), nil
}

// Remove removes a file, a symlink (not what it points to) or a
// directory with what it holds.
func (f *filesystemService) Remove(ctx context.Context, req *connect.Request[pb.RemoveRequest]) (*connect.Response[pb.RemoveResponse], error) {
	sb, p, err := fsRequest(ctx, req.Header(), req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	// Removing what is not there is no error, as in E2B's envd (rm -f).
	if err := f.s.runner.RemoveSessionPath(ctx, sb.ID, sb.Caller, p); err != nil && !errors.Is(err, runner.ErrFileNotFound) {
		return nil, fsRPCError(err)
	}
	return connect.NewResponse(&pb.RemoveResponse{}), nil
}

// watchOptions checks what a watch asks beyond its path: a network mount
// is never watched (a sandbox has none).
func watchOptions(allowNetworkMounts bool) error {
	if allowNetworkMounts {
		return connect.NewError(connect.CodeInvalidArgument, errors.New("allow_network_mounts: boxer sandboxes have no network mounts to watch; leave it unset"))
	}
	return nil
}

// fsEvent is a runner event as envd tells one; with entry, the entry's
// description when it can still be had.
func (f *filesystemService) fsEvent(ctx context.Context, sb *sandbox, ev runner.FileEvent, entry bool) *pb.FilesystemEvent {
	out := &pb.FilesystemEvent{Name: ev.Name}
	switch ev.Type {
	case runner.FileEventCreate:
		out.Type = pb.EventType_EVENT_TYPE_CREATE
	case runner.FileEventWrite:
		out.Type = pb.EventType_EVENT_TYPE_WRITE
	case runner.FileEventRemove:
		out.Type = pb.EventType_EVENT_TYPE_REMOVE
	case runner.FileEventRename:
		out.Type = pb.EventType_EVENT_TYPE_RENAME
	case runner.FileEventChmod:
		out.Type = pb.EventType_EVENT_TYPE_CHMOD
	}
	if entry && ev.Type != runner.FileEventRemove && ev.Type != runner.FileEventRename {
		if e, err := f.s.runner.StatSessionPath(ctx, sb.ID, sb.Caller, ev.Path); err == nil {
			out.Entry = entryInfo(e)
		}
	}
	return out
}

// WatchDir streams a directory's changes: a start event once it is
// watched, then its events and keep-alives, until the client leaves, the
// directory goes or the sandbox ends.
func (f *filesystemService) WatchDir(ctx context.Context, req *connect.Request[pb.WatchDirRequest], stream *connect.ServerStream[pb.WatchDirResponse]) error {
	sb, p, err := fsRequest(ctx, req.Header(), req.Msg.GetPath())
	if err != nil {
		return err
	}
	if err := watchOptions(req.Msg.GetAllowNetworkMounts()); err != nil {
		return err
	}
	// A stream of the caller's as well as a watch.
	done, err := f.s.runner.HoldStream(sb.Caller)
	if err != nil {
		return rpcError(err)
	}
	defer done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := f.s.runner.WatchSessionDir(ctx, sb.ID, sb.Caller, p, req.Msg.GetRecursive())
	if err != nil {
		return fsRPCError(err)
	}
	if err := stream.Send(&pb.WatchDirResponse{Event: &pb.WatchDirResponse_Start{Start: &pb.WatchDirResponse_StartEvent{}}}); err != nil {
		return err
	}
	tick := time.NewTicker(keepaliveEvery(req.Header().Get(keepaliveHeader)))
	defer tick.Stop()
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return fsRPCError(w.Err())
			}
			out := f.fsEvent(ctx, sb, ev, req.Msg.GetIncludeEntry())
			if err := stream.Send(&pb.WatchDirResponse{Event: &pb.WatchDirResponse_Filesystem{Filesystem: out}}); err != nil {
				return err
			}
		case <-tick.C:
			if err := stream.Send(&pb.WatchDirResponse{Event: &pb.WatchDirResponse_Keepalive{Keepalive: &pb.WatchDirResponse_KeepAlive{}}}); err != nil {
				return err
			}
		}
	}
}

// CreateWatcher starts a watch whose events GetWatcherEvents fetches.
func (f *filesystemService) CreateWatcher(ctx context.Context, req *connect.Request[pb.CreateWatcherRequest]) (*connect.Response[pb.CreateWatcherResponse], error) {
	sb, p, err := fsRequest(ctx, req.Header(), req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	if err := watchOptions(req.Msg.GetAllowNetworkMounts()); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.expireLocked()
	n := 0
	for _, w := range f.watchers {
		if w.sandbox == sb.ID {
			n++
		}
	}
	f.mu.Unlock()
	if n >= maxWatchers {
		return nil, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("%d watchers are open in the sandbox, the most boxer keeps: remove one with RemoveWatcher", maxWatchers))
	}
	// The watch outlives this request: it ends at RemoveWatcher, at the
	// sandbox's end or when left unread.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w, err := f.s.runner.WatchSessionDir(wctx, sb.ID, sb.Caller, p, req.Msg.GetRecursive())
	if err != nil {
		cancel()
		return nil, fsRPCError(err)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	wt := &watcher{sandbox: sb.ID, cancel: cancel, used: time.Now()}
	f.mu.Lock()
	f.watchers[id] = wt
	f.mu.Unlock()
	go func() {
		for ev := range w.Events {
			out := f.fsEvent(wctx, sb, ev, req.Msg.GetIncludeEntry())
			wt.mu.Lock()
			if len(wt.events) < maxWatcherEvents {
				wt.events = append(wt.events, out)
			} else if wt.err == nil {
				wt.err = fmt.Errorf("more than %d events were left unread, and later ones were lost: fetch them more often", maxWatcherEvents)
			}
			wt.mu.Unlock()
		}
		wt.mu.Lock()
		if err := w.Err(); err != nil && wt.err == nil {
			wt.err = err
		}
		wt.mu.Unlock()
	}()
	return connect.NewResponse(&pb.CreateWatcherResponse{WatcherId: id}), nil
}

// expireLocked ends the watchers left unread for watcherIdleExpiry.
func (f *filesystemService) expireLocked() {
	for id, w := range f.watchers {
		w.mu.Lock()
		idle := time.Since(w.used) > watcherIdleExpiry
		w.mu.Unlock()
		if idle {
			w.cancel()
			delete(f.watchers, id)
		}
	}
}

// watcherOf finds a watcher of the sandbox by ID.
func (f *filesystemService) watcherOf(sb *sandbox, id string) (*watcher, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := f.watchers[id]
	if !ok || w.sandbox != sb.ID {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("no watcher %q in the sandbox: it was removed, or left unread for %s", id, watcherIdleExpiry))
	}
	return w, nil
}

// GetWatcherEvents returns the events of a watcher since the last call;
// once its watch has ended, the events left and then why it ended.
func (f *filesystemService) GetWatcherEvents(ctx context.Context, req *connect.Request[pb.GetWatcherEventsRequest]) (*connect.Response[pb.GetWatcherEventsResponse], error) {
	w, err := f.watcherOf(sandboxFrom(ctx), req.Msg.GetWatcherId())
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.used = time.Now()
	events := w.events
	w.events = nil
	if len(events) == 0 && w.err != nil {
		return nil, fsRPCError(w.err)
	}
	return connect.NewResponse(&pb.GetWatcherEventsResponse{Events: events}), nil
}

// RemoveWatcher ends a watcher.
func (f *filesystemService) RemoveWatcher(ctx context.Context, req *connect.Request[pb.RemoveWatcherRequest]) (*connect.Response[pb.RemoveWatcherResponse], error) {
	w, err := f.watcherOf(sandboxFrom(ctx), req.Msg.GetWatcherId())
	if err != nil {
		return nil, err
	}
	w.cancel()
	f.mu.Lock()
	delete(f.watchers, req.Msg.GetWatcherId())
	f.mu.Unlock()
	return connect.NewResponse(&pb.RemoveWatcherResponse{}), nil
}
