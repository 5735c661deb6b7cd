package sessionfs

// Watching a directory of a session for changes, from the host.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"
)

const (
	// maxWatchDirs bounds the directories one watch holds: each is an
	// inotify watch (of the host's root, whose count the kernel caps,
	// fs.inotify.max_user_watches) and an open descriptor.
	maxWatchDirs = 1000
	// watchPoll is how often a watch asks whether its session lives: a
	// session's end unmounts its files lazily, which inotify does not
	// tell while the watch holds them open.
	watchPoll = 2 * time.Second
)

// A watch is fsnotify's inotify watcher on directories found inside the
// session's root, never on a host path the sandbox could change: each is
// opened through the root (os.Root, no symlink out), held open for the
// watch's life, and watched through its descriptor's /proc/self/fd name,
// which names the directory opened whatever happens to its path. Events
// come back with that name and are told in the sandbox's paths.

// watchedDir is a directory a watch holds.
type watchedDir struct {
	f *os.File
	// abs is its path in the sandbox, rel under the root, when the watch
	// began on it.
	abs, rel string
}

// dirWatch is one watch's state, its goroutine's alone once started.
type dirWatch struct {
	root      *os.Root
	w         *fsnotify.Watcher
	base      Path
	recursive bool
	// dirs are the watched directories by their descriptor's name;
	// byRel by their rel.
	dirs  map[string]*watchedDir
	byRel map[string]string
}

// Watch watches the directory p (and, recursive, the directories under
// it, those made later too) and returns its events until ctx ends, alive
// says the session is over (asked every watchPoll) or the watched
// directory goes. It returns once the directory is watched: what changes
// after that is told. done is called when a watch it returned ends.
func (f *Files) Watch(ctx context.Context, p Path, recursive bool, alive func(context.Context) error, done func()) (*contract.SessionWatch, error) {
	root, err := f.root(p)
	if err != nil {
		return nil, err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("watching %s: %w", p.Abs, err)
	}
	dw := &dirWatch{root: root, w: w, base: p, recursive: recursive, dirs: map[string]*watchedDir{}, byRel: map[string]string{}}
	if err := dw.add(p.Rel, p.Abs, true, nil); err != nil {
		dw.close()
		return nil, box.FSError(p.Abs, err)
	}
	events := make(chan contract.FileEvent, 64)
	sw := &contract.SessionWatch{Events: events, Done: make(chan struct{})}
	go func() {
		sw.Failure = dw.run(ctx, alive, events)
		dw.close()
		done()
		close(sw.Done)
		close(events)
	}()
	return sw, nil
}

// add watches the directory rel (abs in the sandbox) and, recursive, the
// directories under it. The first directory may be a symlink to one
// inside the root; those under it are not followed. found, if not nil, is
// told what the directories hold already: a directory made while a
// recursive watch runs is watched only once its create is read, and what
// was made in it meanwhile ("mkdir -p a/b && echo > a/b/f") would go
// untold.
func (dw *dirWatch) add(rel, abs string, first bool, found func(abs string)) error {
	if len(dw.dirs) >= maxWatchDirs {
		return contract.FieldErr("recursive", "%s holds more than %d directories, the most one watch takes: watch one further down, or not recursively", dw.base.Abs, maxWatchDirs)
	}
	flag := os.O_RDONLY | unix.O_DIRECTORY
	if !first {
		flag |= unix.O_NOFOLLOW
	}
	f, err := dw.root.OpenFile(rel, flag, 0)
	if err != nil {
		return err
	}
	key := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if err := dw.w.Add(key); err != nil {
		f.Close()
		return fmt.Errorf("watching %s: %w", abs, err)
	}
	dw.dirs[key] = &watchedDir{f: f, abs: abs, rel: rel}
	dw.byRel[rel] = key
	if !dw.recursive {
		return nil
	}
	names, err := f.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, name := range names {
		child := path.Join(rel, name)
		if found != nil {
			found(path.Join(abs, name))
		}
		st, err := dw.root.Lstat(child)
		if err != nil || !st.IsDir() {
			continue
		}
		if err := dw.add(child, path.Join(abs, name), false, found); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// drop stops watching the directory rel and those under it (removed, or
// renamed: under its new name it is watched anew).
func (dw *dirWatch) drop(rel string) {
	for r, key := range dw.byRel {
		if r != rel && !strings.HasPrefix(r, rel+"/") {
			continue
		}
		_ = dw.w.Remove(key)
		dw.dirs[key].f.Close()
		delete(dw.dirs, key)
		delete(dw.byRel, r)
	}
}

func (dw *dirWatch) close() {
	_ = dw.w.Close()
	for _, d := range dw.dirs {
		d.f.Close()
	}
	dw.root.Close()
}

// run turns the watcher's events into the sandbox's until ctx ends, the
// session ends (alive fails), the watched directory goes or the watch fails.
func (dw *dirWatch) run(ctx context.Context, alive func(context.Context) error, out chan<- contract.FileEvent) error {
	poll := time.NewTicker(watchPoll)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-poll.C:
			if err := alive(ctx); err != nil && ctx.Err() == nil {
				return err
			}
		case err := <-dw.w.Errors:
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				return fmt.Errorf("watching %s: changes came faster than they were read, and some were lost: list the directory and watch it again", dw.base.Abs)
			}
			return fmt.Errorf("watching %s: %w", dw.base.Abs, err)
		case ev, ok := <-dw.w.Events:
			if !ok {
				return nil
			}
			events, gone, err := dw.translate(ev)
			if err != nil {
				return err
			}
			for _, e := range events {
				select {
				case out <- e:
				case <-ctx.Done():
					return nil
				}
			}
			if gone {
				return fmt.Errorf("%s was removed: %w", dw.base.Abs, contract.ErrFileNotFound)
			}
		}
	}
}

// translate tells an event in the sandbox's paths, and keeps the watched
// directories up to date; gone says that the watched directory itself is
// gone (removed, or moved away).
func (dw *dirWatch) translate(ev fsnotify.Event) (events []contract.FileEvent, gone bool, err error) {
	var abs, rel string
	if d, ok := dw.dirs[ev.Name]; ok {
		if d.rel != dw.base.Rel {
			// Of a directory under the watched one: its parent's
			// watch tells the same.
			return nil, false, nil
		}
		abs, rel = d.abs, d.rel
	} else {
		dir, name := path.Split(ev.Name)
		d, ok := dw.dirs[strings.TrimSuffix(dir, "/")]
		if !ok {
			return nil, false, nil // of a directory dropped meanwhile
		}
		abs, rel = path.Join(d.abs, name), path.Join(d.rel, name)
	}
	name := dw.name(abs)
	for _, op := range []struct {
		op  fsnotify.Op
		typ string
	}{
		{fsnotify.Create, contract.FileEventCreate}, {fsnotify.Write, contract.FileEventWrite}, {fsnotify.Remove, contract.FileEventRemove},
		{fsnotify.Rename, contract.FileEventRename}, {fsnotify.Chmod, contract.FileEventChmod},
	} {
		if ev.Op.Has(op.op) {
			events = append(events, contract.FileEvent{Type: op.typ, Path: abs, Name: name})
		}
	}
	switch {
	case rel == dw.base.Rel && (ev.Op.Has(fsnotify.Remove) || ev.Op.Has(fsnotify.Rename)):
		return events, true, nil
	case ev.Op.Has(fsnotify.Remove) || ev.Op.Has(fsnotify.Rename):
		dw.drop(rel)
	case ev.Op.Has(fsnotify.Create) && dw.recursive:
		if st, err := dw.root.Lstat(rel); err == nil && st.IsDir() {
			found := func(abs string) {
				events = append(events, contract.FileEvent{Type: contract.FileEventCreate, Path: abs, Name: dw.name(abs)})
			}
			if err := dw.add(rel, abs, false, found); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return events, false, box.FSError(abs, err)
			}
		}
	}
	return events, false, nil
}

// name is abs relative to the watched directory, "." for itself.
func (dw *dirWatch) name(abs string) string {
	if name := strings.TrimPrefix(strings.TrimPrefix(abs, dw.base.Abs), "/"); name != "" {
		return name
	}
	return "."
}
