package contract

// A session's files as its callers see them, on every platform: entries, events, errors.

import (
	"errors"
	"fmt"
	"strings"
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
	// Metadata is a regular file's user.e2b.* extended attributes (E2B's
	// file metadata), without the prefix.
	Metadata map[string]string `json:"metadata,omitempty"`
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
	// Failure and Done are the watcher's (runner): Done is closed once
	// Failure is set; callers read Err.
	Failure error
	Done    chan struct{}
}

// Err is why the watch ended, once Events is closed: nil when the
// caller's context ended, a SessionEndedError when the session did.
func (w *SessionWatch) Err() error {
	<-w.Done
	return w.Failure
}

// ErrSessionFull is a write that did not fit in a session's files, which
// /workspace, /tmp and the home share.
var ErrSessionFull = errors.New("the session's files are full: /workspace, /tmp and /home/user share its tmp_size; remove files, or make the session with a larger tmp_size")

// ErrFileExists is a path that names something already, where a move or
// a directory must go, or a directory that is not empty.
var ErrFileExists = errors.New("exists already")

// The kinds of a PathError.
var (
	// ErrNotRegular is a FIFO, a socket or a device where a file is read
	// or written: the host opens none of them for either (a FIFO the
	// sandbox planted would hold the host's thread until someone opened
	// its other end).
	ErrNotRegular = errors.New("not a regular file")
	// ErrNameTooLong is a path longer than the kernel takes, or a name in
	// it longer than a directory holds.
	ErrNameTooLong = errors.New("path or name too long")
	// ErrLeadsOut is a path on which a symlink leads out of its root:
	// what lies there is none of the session's.
	ErrLeadsOut = errors.New("a symlink on the way leads out of the session's directory")
)

// The longest path (PATH_MAX) and name (NAME_MAX) Linux takes.
const (
	MaxPathBytes = 4096
	maxNameBytes = 255
)

// PathError is a path of a session that a file operation refuses for
// what it names or how long it is, whichever interface asked. Err is its
// kind: errors.Is(err, ErrInvalid) holds for ErrNotRegular and
// ErrNameTooLong, errors.Is(err, ErrFileNotFound) for ErrLeadsOut.
type PathError struct {
	// Field names the path in the caller's request (path, to, files).
	Field string
	// Path is the path as the sandbox sees it, cut in the middle if long.
	Path string
	// Err is ErrNotRegular, ErrNameTooLong or ErrLeadsOut.
	Err error
	// Type is what the path names instead of a regular file, for
	// ErrNotRegular: a FIFO, a socket or a device.
	Type string
}

// Error names the path and says what to do.
func (e *PathError) Error() string {
	switch e.Err {
	case ErrNotRegular:
		return fmt.Sprintf("%s is a %s, not a regular file: only regular files are read and written (remove it first to write a file there)", e.Path, e.Type)
	case ErrNameTooLong:
		return fmt.Sprintf("%s: too long: a path takes at most %d bytes, a name in it %d", e.Path, MaxPathBytes, maxNameBytes)
	case ErrLeadsOut:
		return fmt.Sprintf("%s: no such file in the session: a symlink on the way leads out of /workspace, /tmp or %s, whichever it starts in", e.Path, SessionHome)
	}
	return e.Path + ": " + e.Err.Error()
}

// Unwrap gives the kind, and ErrInvalid or ErrFileNotFound.
func (e *PathError) Unwrap() []error {
	if e.Err == ErrLeadsOut {
		return []error{e.Err, ErrFileNotFound}
	}
	return []error{e.Err, ErrInvalid}
}

// maxPathShown is how much of a path an error repeats: a caller's path
// is named, never echoed back whole.
const maxPathShown = 160

// CutPath is p as an error names it: whole if short, else its start and
// its end with how long it is between them.
func CutPath(p string) string {
	if len(p) <= maxPathShown {
		return p
	}
	head, tail := p[:100], p[len(p)-40:]
	return strings.ToValidUTF8(head, "") + fmt.Sprintf("...(%d bytes)...", len(p)) + strings.ToValidUTF8(tail, "")
}
