package runner

// A session's files as its callers see them, on every platform: entries, events, errors.

import (
	"errors"
	"time"
)

// SessionHome is a session's home directory, its HOME: with /workspace
// and /tmp, what of a session its callers read and write.
const SessionHome = "/home/user"

// FieldPath names a path in a session in errors.
const FieldPath = "path"

// The types of a FileEntry.
const (
	FileTypeFile    = "file"
	FileTypeDir     = "dir"
	FileTypeSymlink = "symlink"
	// FileTypeOther is a FIFO, a socket or a device.
	FileTypeOther = "other"
)

// FileEntry is a file, directory or symlink in a session, as its sandbox
// sees it: its own path, ids and mode. Its fields mean what those of
// E2B's filesystem.EntryInfo mean.
type FileEntry struct {
	Name string `json:"name"`
	// Path is absolute in the sandbox.
	Path string `json:"path"`
	// Type is file, dir, symlink or other. A symlink is not followed:
	// SymlinkTarget is what it points to.
	Type string `json:"type"`
	Size int64  `json:"size"`
	// Mode is the permission bits with setuid, setgid and sticky
	// (0644 is 420); Permissions writes the mode as ls does.
	Mode          uint32    `json:"mode"`
	Permissions   string    `json:"permissions"`
	UID           uint32    `json:"uid"`
	GID           uint32    `json:"gid"`
	ModifiedAt    time.Time `json:"modified_at"`
	SymlinkTarget string    `json:"symlink_target,omitempty"`
}

// The types of a FileEvent, fsnotify's operations.
const (
	FileEventCreate = "create"
	FileEventWrite  = "write"
	FileEventRemove = "remove"
	// FileEventRename is the old name of something renamed; its new name
	// comes as a create.
	FileEventRename = "rename"
	FileEventChmod  = "chmod"
)

// FileEvent is a change in a watched directory of a session.
type FileEvent struct {
	Type string `json:"type"`
	// Path is absolute in the sandbox; Name is relative to the watched
	// directory (E2B's FilesystemEvent.name). A directory renamed under
	// a watch keeps the name it had when the watch began on it.
	Path string `json:"path"`
	Name string `json:"name"`
}

// SessionWatch is a watch on a directory of a session: Events until the
// caller's context ends, the session ends or the watch fails; then Err
// says why.
type SessionWatch struct {
	Events <-chan FileEvent
	err    error
	done   chan struct{}
}

// Err is why the watch ended, once Events is closed: nil when the
// caller's context ended, a SessionEndedError when the session did.
func (w *SessionWatch) Err() error {
	<-w.done
	return w.err
}

// ErrSessionFull is a write that did not fit in a session's files, which
// /workspace, /tmp and the home share.
var ErrSessionFull = errors.New("the session's files are full: /workspace, /tmp and /home/user share its tmp_size; remove files, or make the session with a larger tmp_size")

// ErrFileExists is a path that names something already, where a move or
// a directory must go, or a directory that is not empty.
var ErrFileExists = errors.New("exists already")
