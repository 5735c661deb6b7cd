package secrets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// CmdTimeout is how long a cmd: source may run when its Spec sets no
// Timeout. A helper that asks a vault or a password manager answers in
// seconds; one that waits longer is most likely waiting for a prompt that
// nobody sees.
const CmdTimeout = 30 * time.Second

// cmdWaitDelay is how long boxer waits for a command's output to close
// after the command exits or is killed: a process it left behind may hold
// the pipe open.
const cmdWaitDelay = 2 * time.Second

// stderrKeep is how much of the end of a command's stderr is kept for its
// error message; stderrLineMax is how much of its last line is shown.
const (
	stderrKeep    = 4 << 10
	stderrLineMax = 200
)

// Load reads the secret's value from its source. The value is byte-exact,
// except that a command's trailing line ends are trimmed, as the shell's
// $(...) does. An empty value or one over MaxValueBytes is an error. A
// command runs for at most s.Timeout (CmdTimeout if zero) or until ctx ends.
func (s Spec) Load(ctx context.Context) ([]byte, error) {
	if err := CheckName(s.Name); err != nil {
		return nil, err
	}
	v, err := s.load(ctx)
	if err == nil {
		err = checkValue(v)
	}
	if err != nil {
		return nil, fmt.Errorf("secret %s: %w", s.Name, err)
	}
	return v, nil
}

// load reads the value from the source of its kind.
func (s Spec) load(ctx context.Context) ([]byte, error) {
	switch s.Source.Kind {
	case FromEnv:
		v, ok := os.LookupEnv(s.Name)
		if !ok {
			return nil, fmt.Errorf("boxer's environment has no %[1]s: export it, or give %[1]s=file:PATH or %[1]s=cmd:COMMAND", s.Name)
		}
		return []byte(v), nil
	case FromFile:
		return readValueFile(s.Source.Path)
	case FromCmd:
		timeout := s.Timeout
		if timeout <= 0 {
			timeout = CmdTimeout
		}
		return runCmd(ctx, s.Source.Argv, timeout)
	}
	return nil, fmt.Errorf("unknown source %v: give NAME, NAME=file:PATH or NAME=cmd:COMMAND", s.Source.Kind)
}

// checkValue reports what is wrong with a loaded value.
func checkValue(v []byte) error {
	if len(v) == 0 {
		return errors.New("the value is empty")
	}
	if len(v) > MaxValueBytes {
		return fmt.Errorf("the value is longer than %s, the most a secret may hold", valueLimitText)
	}
	return nil
}

// readValueFile reads a regular file (through symlinks) of at most
// MaxValueBytes. The size is checked while reading, since a file may grow
// after it is looked at.
func readValueFile(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("empty path: give file:PATH")
	}
	// A look before opening keeps boxer from opening a device or a pipe at
	// all; the look after opening is the one that counts.
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s does not exist: give the path of a file that holds the value", path)
	}
	if err != nil {
		return nil, err
	}
	if err := checkRegular(path, fi.Mode()); err != nil {
		return nil, err
	}
	f, err := openValueFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := checkRegular(path, fi.Mode()); err != nil {
		return nil, err
	}
	v, err := io.ReadAll(io.LimitReader(f, MaxValueBytes+1))
	if err != nil {
		return nil, err
	}
	if len(v) > MaxValueBytes {
		return nil, fmt.Errorf("%s is larger than %s, the most a secret may hold", path, valueLimitText)
	}
	return v, nil
}

// checkRegular refuses anything but a regular file, saying what it is.
func checkRegular(path string, m fs.FileMode) error {
	if m.IsRegular() {
		return nil
	}
	what := "not a regular file"
	switch {
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	}
	return fmt.Errorf("%s is %s: give a regular file that holds the value", path, what)
}

// runCmd runs argv without a shell, with stdin from /dev/null and boxer's
// environment, and returns its stdout without trailing line ends. Its
// stderr is never printed: the last line of it goes into the error when the
// command fails.
func runCmd(ctx context.Context, argv []string, timeout time.Duration) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("empty command: give cmd:COMMAND ARGS")
	}
	shown := strings.Join(argv, " ")
	cmdCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cmdCtx, argv[0], argv[1:]...)
	cmd.Env = os.Environ()
	// Room for a full-size value and its line end.
	stdout := &cappedBuffer{limit: MaxValueBytes + 2}
	stderr := &tailBuffer{limit: stderrKeep}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = cmdWaitDelay
	killGroupOnCancel(cmd)

	err := cmd.Run()
	switch {
	case stdout.over:
		return nil, fmt.Errorf("%s: printed more than %s, the most a secret may hold", shown, valueLimitText)
	case err == nil:
		return trimLineEnds(stdout.buf), nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s: %w", shown, ctx.Err())
	case cmdCtx.Err() != nil:
		return nil, withStderr(fmt.Errorf("%s: did not finish within %s", shown, timeout), stderr)
	case errors.Is(err, exec.ErrWaitDelay):
		return nil, fmt.Errorf("%s: exited, but a process it started kept its output open: make it print the value and exit", shown)
	}
	return nil, withStderr(fmt.Errorf("%s: %w", shown, err), stderr)
}

// withStderr appends the last line of a failed command's stderr to err.
func withStderr(err error, stderr *tailBuffer) error {
	line := lastLine(stderr.buf)
	if line == "" {
		return err
	}
	return fmt.Errorf("%w: %s", err, line)
}

// lastLine returns the last non-empty line of b, trimmed, made printable
// and cut to stderrLineMax bytes, so that it fits on one line of a message.
func lastLine(b []byte) string {
	s := string(b)
	for s != "" {
		var line string
		if i := strings.LastIndexByte(s, '\n'); i >= 0 {
			s, line = s[:i], s[i+1:]
		} else {
			s, line = "", s
		}
		if line = printable(line); line != "" {
			return cutUTF8(line, stderrLineMax)
		}
	}
	return ""
}

// printable returns s trimmed, with invalid UTF-8 and control characters
// (colour codes, carriage returns) replaced.
func printable(s string) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}

// cutUTF8 returns at most n bytes of s, not splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// trimLineEnds trims all trailing "\n" and "\r\n" from b, as $(...) does.
func trimLineEnds(b []byte) []byte {
	for {
		rest, ok := bytes.CutSuffix(b, []byte("\n"))
		if !ok {
			return b
		}
		b = bytes.TrimSuffix(rest, []byte("\r"))
	}
}

// cappedBuffer keeps what is written to it up to limit bytes; a write past
// the limit fails (the command then gets EPIPE or SIGPIPE) and sets over.
type cappedBuffer struct {
	buf   []byte
	limit int
	over  bool
}

// Write appends p, or fails if that would pass the limit.
func (b *cappedBuffer) Write(p []byte) (int, error) {
	if len(b.buf)+len(p) > b.limit {
		b.over = true
		return 0, errors.New("output too long")
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	buf   []byte
	limit int
}

// Write keeps the end of p after what it holds, dropping older bytes.
func (b *tailBuffer) Write(p []byte) (int, error) {
	if len(p) >= b.limit {
		b.buf = append(b.buf[:0], p[len(p)-b.limit:]...)
		return len(p), nil
	}
	b.buf = append(b.buf, p...)
	if extra := len(b.buf) - b.limit; extra > 0 {
		b.buf = append(b.buf[:0], b.buf[extra:]...)
	}
	return len(p), nil
}

// LoadDir loads one secret per file of dir, named as the file, for serve
// --secrets-dir. Entries whose names start with "." are skipped: a
// Kubernetes secret volume holds ..data and ..<timestamp> directories and
// the real files are symlinks into them. Symlinks are followed, but each
// entry must resolve to a regular file. Values are byte-exact, not empty
// and at most MaxValueBytes; the list is sorted by name.
func LoadDir(dir string) ([]Named, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading secrets dir: %w", err)
	}
	var list []Named
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if len(list) == MaxSecrets {
			return nil, fmt.Errorf("secrets dir %s: more than %d secrets: keep at most %d files in it", dir, MaxSecrets, MaxSecrets)
		}
		v, err := loadDirEntry(dir, e.Name())
		if err != nil {
			return nil, fmt.Errorf("secrets dir %s: %w", dir, err)
		}
		list = append(list, Named{Name: e.Name(), Value: v})
	}
	// os.ReadDir sorts by file name, which is the secret's name.
	return list, nil
}

// loadDirEntry reads the secret in file name of dir.
func loadDirEntry(dir, name string) ([]byte, error) {
	if err := CheckName(name); err != nil {
		return nil, fmt.Errorf("%w (each file's name is its secret's name)", err)
	}
	path := filepath.Join(dir, name)
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory: a secrets dir holds one file per secret", name)
	}
	v, err := readValueFile(path)
	if err == nil {
		err = checkValue(v)
	}
	if err != nil {
		return nil, fmt.Errorf("secret %s: %w", name, err)
	}
	return v, nil
}
