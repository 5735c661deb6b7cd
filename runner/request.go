// Package runner runs one program in a fresh, hardened sandbox on containerd
// and reports how it ended and what it cost. Run is the only entry point the
// CLI and the server use; docs/reference.md describes the contract.
package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/go-units"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Defaults of a Request's zero fields (docs/reference.md).
const (
	DefaultTimeout     = 30 * time.Second
	DefaultMemory      = 256 << 20
	DefaultCPUs        = 1.0
	DefaultPids        = 64
	DefaultTmpSize     = 64 << 20
	DefaultOutputLimit = 1 << 20
	DefaultUID         = 65534
	DefaultGID         = 65534
	DefaultRuntime     = "runc"
	DefaultNetwork     = "none"
)

// Runtimes lists the OCI runtimes a Request may name.
func Runtimes() []string { return []string{"runc", "runsc"} }

// Networks lists the network modes a Request may name.
func Networks() []string { return []string{"none"} }

// Request says what to run and within which limits. Zero fields take the
// defaults above; Normalize fills them in and checks the rest.
type Request struct {
	// Lang names a preset (see Presets); Code is its program. Without Lang,
	// Args is run in Image.
	Lang  string
	Code  []byte
	Image string
	Args  []string
	// Env holds K=V pairs set on top of the image's environment.
	Env []string

	Timeout     time.Duration
	MemoryBytes int64
	CPUs        float64
	Pids        int64
	TmpBytes    int64
	OutputLimit int64
	UID, GID    uint32
	// UserSet tells that UID and GID were given (0:0 is a valid choice).
	UserSet bool
	Runtime string
	Network string
	// Seccomp replaces the default profile; nil keeps it.
	Seccomp *specs.LinuxSeccomp

	// Stdin feeds the program's standard input; nil means empty (EOF at once).
	Stdin io.Reader `json:"-"`
	// CopyIn is a host directory copied into /workspace before the run.
	CopyIn string
	// Files are written into /workspace before the run (path relative to
	// /workspace to content), as the server's "files" field asks.
	Files map[string][]byte `json:"-"`
	// CopyOut is a host directory /workspace is copied to after the run
	// (also after a timeout or an OOM kill).
	CopyOut string

	// Stdout and Stderr, if set, receive the program's output as it comes,
	// capped by OutputLimit like the copies kept in the Result.
	Stdout io.Writer `json:"-"`
	Stderr io.Writer `json:"-"`
}

// The names of a Request's fields in errors: the request's own terms, as
// the HTTP API and MCP name them. The CLI maps them to its flags.
const (
	FieldLang        = "lang"
	FieldCode        = "code"
	FieldImage       = "image"
	FieldCommand     = "command"
	FieldEnv         = "env"
	FieldTimeout     = "timeout"
	FieldMemory      = "memory"
	FieldCPUs        = "cpus"
	FieldPids        = "pids"
	FieldTmpSize     = "tmp_size"
	FieldOutputLimit = "output_limit"
	FieldUser        = "user"
	FieldRuntime     = "runtime"
	FieldNetwork     = "network"
	FieldSeccomp     = "seccomp_profile"
	FieldFiles       = "files"
	FieldCopyIn      = "copy_in"
	FieldCopyOut     = "copy_out"
)

// FieldError is a request boxer refuses: Field names the field at fault and
// Message says what it accepts. errors.Is(err, ErrInvalid) holds for it.
type FieldError struct {
	Field   string
	Message string
}

// Message may name other fields in braces ("raise {tmp_size}"): Render
// writes them, and the field at fault, in the caller's own terms.

// Error reads as a sentence: "memory must be at least 6MiB, not 1KiB".
func (e *FieldError) Error() string { return e.Render(nil) }

// Render writes the error with each field named by name (a CLI's flags);
// nil keeps the request's own terms.
func (e *FieldError) Render(name func(field string) string) string {
	if name == nil {
		name = func(f string) string { return f }
	}
	return name(e.Field) + " " + e.Text(name)
}

// Text is the message alone, other fields named by name (nil: the
// request's own terms), as the HTTP API answers it beside the field.
func (e *FieldError) Text(name func(field string) string) string {
	if name == nil {
		name = func(f string) string { return f }
	}
	var pairs []string
	for _, f := range fields() {
		pairs = append(pairs, "{"+f+"}", name(f))
	}
	return strings.NewReplacer(pairs...).Replace(e.Message)
}

// fields lists every field name a message may refer to.
func fields() []string {
	return []string{FieldLang, FieldCode, FieldImage, FieldCommand, FieldEnv, FieldTimeout, FieldMemory, FieldCPUs,
		FieldPids, FieldTmpSize, FieldOutputLimit, FieldUser, FieldRuntime, FieldNetwork, FieldSeccomp, FieldFiles,
		FieldCopyIn, FieldCopyOut}
}

// Is makes a FieldError an ErrInvalid.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// Normalize returns r with its defaults filled in, or a *FieldError for the
// first field it refuses. Run normalizes every request; callers normalize
// first to refuse bad input before anything else. Normalizing twice gives
// the same request.
func (r Request) Normalize() (Request, error) {
	r.Timeout = or(r.Timeout, DefaultTimeout)
	r.MemoryBytes = or(r.MemoryBytes, DefaultMemory)
	r.CPUs = or(r.CPUs, DefaultCPUs)
	r.Pids = or(r.Pids, DefaultPids)
	r.TmpBytes = or(r.TmpBytes, DefaultTmpSize)
	r.OutputLimit = or(r.OutputLimit, DefaultOutputLimit)
	if !r.UserSet {
		r.UID, r.GID, r.UserSet = DefaultUID, DefaultGID, true
	}
	r.Runtime = or(r.Runtime, DefaultRuntime)
	r.Network = or(r.Network, DefaultNetwork)
	return r, r.check()
}

// Maxima cap what a request may ask for (the operator of a server sets
// them); a zero maximum is no cap.
type Maxima struct {
	Timeout     time.Duration
	MemoryBytes int64
	CPUs        float64
	Pids        int64
	TmpBytes    int64
	OutputLimit int64
}

// NormalizeWithin is Normalize for a caller bound by max: an unset limit
// takes its default lowered to the maximum, and a set one above the
// maximum is refused.
func (r Request) NormalizeWithin(max Maxima) (Request, error) {
	for _, err := range []error{
		capLimit(FieldTimeout, &r.Timeout, DefaultTimeout, max.Timeout),
		capLimit(FieldMemory, &r.MemoryBytes, DefaultMemory, max.MemoryBytes),
		capLimit(FieldCPUs, &r.CPUs, DefaultCPUs, max.CPUs),
		capLimit(FieldPids, &r.Pids, DefaultPids, max.Pids),
		capLimit(FieldTmpSize, &r.TmpBytes, DefaultTmpSize, max.TmpBytes),
		capLimit(FieldOutputLimit, &r.OutputLimit, DefaultOutputLimit, max.OutputLimit),
	} {
		if err != nil {
			return r, err
		}
	}
	return r.Normalize()
}

// or is v, or def when v is the zero value.
func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// capLimit lowers an unset limit's default to max and refuses a set limit
// above it (max <= 0: no cap).
func capLimit[T int64 | float64 | time.Duration](field string, v *T, def, max T) error {
	switch {
	case max <= 0:
	case *v == 0:
		*v = min(def, max)
	case *v > max:
		return fieldErr(field, "%s is above this server's maximum of %s", formatLimit(field, float64(*v)), formatLimit(field, float64(max)))
	}
	return nil
}

// CheckLimit checks a value given for one of the limits (timeout in
// nanoseconds, sizes in bytes): Normalize applies it to every limit, and
// decoders to a value given explicitly, where zero is no default but a
// mistake (--cpus 0).
func CheckLimit(field string, v float64) error {
	var least float64
	var msg string
	switch field {
	case FieldTimeout:
		least, msg = 1, "must be positive, like 30s"
	case FieldMemory:
		// runc itself needs a few MiB of the sandbox's memory to start it.
		least, msg = 6<<20, "must be at least 6MiB"
	case FieldCPUs:
		least, msg = 0.01, "must be at least 0.01"
	case FieldPids:
		least, msg = 1, "must be at least 1"
	case FieldTmpSize, FieldOutputLimit:
		least, msg = 1, "must be larger than 0"
	default:
		return nil
	}
	if v < least {
		return fieldErr(field, "%s, not %s", msg, formatLimit(field, v))
	}
	return nil
}

// formatLimit writes a limit's value the way a caller writes it.
func formatLimit(field string, v float64) string {
	switch field {
	case FieldTimeout:
		return time.Duration(v).String()
	case FieldMemory, FieldTmpSize, FieldOutputLimit:
		if v < 0 {
			return fmt.Sprintf("%g", v)
		}
		return units.BytesSize(v)
	}
	return fmt.Sprintf("%g", v)
}

// check refuses what Normalize cannot default: unknown names, a program
// that is not there twice or not at all, bad variables and paths.
func (r Request) check() error {
	for _, l := range []struct {
		field string
		v     float64
	}{
		{FieldTimeout, float64(r.Timeout)}, {FieldMemory, float64(r.MemoryBytes)}, {FieldCPUs, r.CPUs},
		{FieldPids, float64(r.Pids)}, {FieldTmpSize, float64(r.TmpBytes)}, {FieldOutputLimit, float64(r.OutputLimit)},
	} {
		if err := CheckLimit(l.field, l.v); err != nil {
			return err
		}
	}
	if !contains(Runtimes(), r.Runtime) {
		return fieldErr(FieldRuntime, "must be %s, not %q", strings.Join(Runtimes(), " or "), r.Runtime)
	}
	if !contains(Networks(), r.Network) {
		return fieldErr(FieldNetwork, "must be %s, not %q: sandboxes have no network", strings.Join(Networks(), " or "), r.Network)
	}
	if err := r.checkProgram(); err != nil {
		return err
	}
	for _, kv := range r.Env {
		if err := checkEnv(kv); err != nil {
			return err
		}
	}
	if r.Seccomp != nil && len(r.Seccomp.Syscalls) == 0 {
		return fieldErr(FieldSeccomp, "has no rules: boxer never runs without a seccomp filter")
	}
	return r.checkFiles()
}

// checkProgram: a language with its code, or an image with a command.
func (r Request) checkProgram() error {
	switch {
	case r.Lang != "":
		if _, err := LookupPreset(r.Lang); err != nil {
			return err
		}
		if len(r.Args) > 0 {
			return fieldErr(FieldCommand, "is for an image: with {lang}, the program is the code")
		}
	case len(r.Code) > 0:
		return fieldErr(FieldCode, "needs {lang}; without it, {image} and {command} say what runs")
	case r.Image == "":
		return fieldErr(FieldLang, "is required, or {image} with {command}: nothing to run")
	case len(r.Args) == 0:
		return fieldErr(FieldCommand, "is required with {image} (or give {lang}): nothing to run")
	}
	return nil
}

func checkEnv(kv string) error {
	k, _, ok := strings.Cut(kv, "=")
	if !ok || k == "" {
		return fieldErr(FieldEnv, "%q must be NAME=VALUE", kv)
	}
	for i, c := range k {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return fieldErr(FieldEnv, "%q: %q is not a valid variable name", kv, k)
		}
	}
	return nil
}

// checkFiles: what goes into /workspace fits, and the host directories are
// directories.
func (r Request) checkFiles() error {
	if r.CopyOut != "" {
		if st, err := os.Stat(r.CopyOut); err == nil && !st.IsDir() {
			return fieldErr(FieldCopyOut, "%s exists and is not a directory", r.CopyOut)
		}
	}
	if r.CopyIn != "" {
		if st, err := os.Stat(r.CopyIn); err != nil || !st.IsDir() {
			return fieldErr(FieldCopyIn, "%s is not a directory", r.CopyIn)
		}
	}
	var size int64
	for name, data := range r.Files {
		if !filepath.IsLocal(name) || strings.ContainsRune(name, 0) {
			return fieldErr(FieldFiles, "%q must be a relative path inside /workspace", name)
		}
		size += int64(len(data))
	}
	if size > r.TmpBytes {
		return fieldErr(FieldFiles, "hold %d bytes, more than the workspace's %d: raise {tmp_size}", size, r.TmpBytes)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Shape is what a sandbox is made of before its program is known: image,
// command, environment, user, runtime, limits, seccomp. Two normalized
// requests of the same shape can use each other's pre-created sandbox;
// everything else of a request (its delivery) is given to the sandbox when
// its program starts. Shape is comparable: it keys the warm pool.
type Shape struct {
	Lang, Image, Runtime, Network string
	// Args and Env are joined with NUL bytes, in order.
	Args, Env   string
	UID, GID    uint32
	MemoryBytes int64
	CPUs        float64
	Pids        int64
	TmpBytes    int64
	// Seccomp is the digest of a replaced profile; empty for the default.
	Seccomp string
}

// Shape returns the shape of a normalized request.
func (r Request) Shape() Shape {
	s := Shape{
		Lang: r.Lang, Image: r.image(), Runtime: r.Runtime, Network: r.Network,
		Args: strings.Join(r.args(), "\x00"), Env: strings.Join(r.Env, "\x00"),
		UID: r.UID, GID: r.GID,
		MemoryBytes: r.MemoryBytes, CPUs: r.CPUs, Pids: r.Pids, TmpBytes: r.TmpBytes,
	}
	if r.Seccomp != nil {
		data, _ := json.Marshal(r.Seccomp)
		sum := sha256.Sum256(data)
		s.Seccomp = hex.EncodeToString(sum[:])
	}
	return s
}

// delivery is what a sandbox gets of its request when the program starts,
// rather than when the sandbox is made: the program's code and input,
// files, the time and output it may take, where its output and files go.
// Every field of Request is in its Shape or here, under the same name
// (TestShapeCoversRequest).
type delivery struct {
	Code        []byte
	Stdin       io.Reader
	Files       map[string][]byte
	CopyIn      string
	CopyOut     string
	Timeout     time.Duration
	OutputLimit int64
	Stdout      io.Writer
	Stderr      io.Writer
}

func (r Request) delivery() delivery {
	return delivery{
		Code: r.Code, Stdin: r.Stdin, Files: r.Files, CopyIn: r.CopyIn, CopyOut: r.CopyOut,
		Timeout: r.Timeout, OutputLimit: r.OutputLimit, Stdout: r.Stdout, Stderr: r.Stderr,
	}
}

// image is the image a request runs in: its own, or its preset's.
func (r Request) image() string {
	if r.Image != "" || r.Lang == "" {
		return r.Image
	}
	p, _ := LookupPreset(r.Lang)
	return p.Image
}

// args is the argv a request runs: its preset's interpreter on the code
// file, or its command.
func (r Request) args() []string {
	if r.Lang == "" {
		return r.Args
	}
	p, _ := LookupPreset(r.Lang)
	return p.Args()
}
