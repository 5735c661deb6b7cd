package contract

import (
	"io"
	"math"

	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/egress"

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
	// DefaultNetBytes caps a run's network traffic (in + out) when it has
	// egress.
	DefaultNetBytes = 100 << 20
	// DefaultNetConns caps a run's concurrent connections.
	DefaultNetConns = 64
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
	// AllowHosts opens egress to these destinations only (HOST[:PORT],
	// see egress.ParseRule); empty: no network. Normalize leaves each
	// entry as given.
	AllowHosts []string
	// NetBytes caps bytes in + out through boxer's proxy when AllowHosts
	// is set.
	NetBytes int64
	// Secrets names the secrets of the runner's store the program gets,
	// each "NAME" or "NAME,env": the file /run/secrets/NAME (and, with
	// ",env", the variable NAME). A secret an injection rule of the runner
	// uses is never delivered: its proxy sets the rule's header instead.
	Secrets []string
	// Seccomp replaces the default profile; nil keeps it.
	Seccomp *specs.LinuxSeccomp
	// Preload names the modules a sandbox made ahead of the request (a
	// warm one, a standby) imports before its program is known; a
	// sandbox made for the request itself runs its program plainly.
	// NormalizeWithin fills it in from the operator's lists unless
	// NoPreload, which empties it: the request takes only a sandbox
	// that has imported nothing.
	Preload   []string
	NoPreload bool

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
	// ReturnFiles are globs (path.Match, relative to /workspace) of the
	// files the result carries back after the run, at most ReturnBytes of
	// content in all (the server's "return_files").
	ReturnFiles []string
	ReturnBytes int64

	// Stdout and Stderr, if set, receive the program's output as it comes,
	// capped by OutputLimit like the copies kept in the Result.
	Stdout io.Writer `json:"-"`
	Stderr io.Writer `json:"-"`
}

// Normalize returns r with its defaults filled in, or a *FieldError for the
// first field it refuses. Run normalizes every request; callers normalize
// first to refuse bad input before anything else. Normalizing twice gives
// the same request.
func (r Request) Normalize() (Request, error) {
	r.Timeout = Or(r.Timeout, DefaultTimeout)
	r.MemoryBytes = Or(r.MemoryBytes, DefaultMemory)
	r.CPUs = Or(r.CPUs, DefaultCPUs)
	r.Pids = Or(r.Pids, DefaultPids)
	r.TmpBytes = Or(r.TmpBytes, DefaultTmpSize)
	r.OutputLimit = Or(r.OutputLimit, DefaultOutputLimit)
	if !r.UserSet {
		r.UID, r.GID, r.UserSet = DefaultUID, DefaultGID, true
	}
	r.Runtime = Or(r.Runtime, DefaultRuntime)
	r.Network = Or(r.Network, DefaultNetwork)
	if len(r.AllowHosts) > 0 {
		r.NetBytes = Or(r.NetBytes, DefaultNetBytes)
	}
	if len(r.ReturnFiles) > 0 {
		r.ReturnBytes = Or(r.ReturnBytes, DefaultReturnBytes)
	}
	if r.NoPreload {
		r.Preload = nil
	}
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
	NetBytes    int64
	// ReturnBytes is the cap on the content of returned files (not a
	// maximum: the cap itself; 0 is DefaultReturnBytes).
	ReturnBytes int64
	// AllowHosts is the operator's allowlist: a request's may only narrow
	// it, and without it no request has network.
	AllowHosts []string
	// Preload is the operator's preload lists (not a maximum: a request
	// that sets no Preload takes its language's, unless NoPreload).
	Preload Preloads
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
		capLimit(FieldNetBytes, &r.NetBytes, DefaultNetBytes, max.NetBytes),
		r.WithinAllowlist(max.AllowHosts),
	} {
		if err != nil {
			return r, err
		}
	}
	if r.Preload == nil && !r.NoPreload {
		r.Preload = max.Preload.For(r.Lang)
	}
	return r.Normalize()
}

// Or is v, or def when v is the zero value.
func Or[T comparable](v, def T) T {
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
		return FieldErr(field, "%s is above this server's maximum of %s", formatLimit(field, float64(*v)), formatLimit(field, float64(max)))
	}
	return nil
}

// check refuses what Normalize cannot default: unknown names, a program
// that is not there twice or not at all, bad variables and paths.
// withinAllowlist refuses egress the operator's allowlist does not cover
// (a forbidden FieldError: the request is well-formed, not permitted).
func (r *Request) WithinAllowlist(operator []string) error {
	if len(r.AllowHosts) == 0 {
		return nil
	}
	if len(operator) == 0 {
		return forbidden(FieldAllowHosts, "asks for network egress, which this server does not allow (its operator gives none with --allow-host)")
	}
	p, err := egress.ParsePolicy(r.AllowHosts)
	if err != nil {
		return FieldErr(FieldAllowHosts, "%v", err)
	}
	outer, err := egress.ParsePolicy(operator)
	if err != nil {
		return err
	}
	if err := p.Within(outer); err != nil {
		return forbidden(FieldAllowHosts, "%v", err)
	}
	return nil
}

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
	// (uid_t)-1 is no user to the kernel: chown leaves the owner as it
	// is, setuid and a tmpfs's uid= refuse it.
	if r.UID == math.MaxUint32 || r.GID == math.MaxUint32 {
		return FieldErr(FieldUser, "must be a numeric UID:GID below 4294967295 (-1 to the kernel: no user), not %d:%d", r.UID, r.GID)
	}
	if !contains(Runtimes(), r.Runtime) {
		return FieldErr(FieldRuntime, "must be %s, not %q", strings.Join(Runtimes(), " or "), r.Runtime)
	}
	if !contains(Networks(), r.Network) {
		return FieldErr(FieldNetwork, "must be %s, not %q: sandboxes have no network", strings.Join(Networks(), " or "), r.Network)
	}
	if err := r.checkProgram(); err != nil {
		return err
	}
	for _, kv := range r.Env {
		if err := CheckEnv(kv); err != nil {
			return err
		}
	}
	if _, err := egress.ParsePolicy(r.AllowHosts); err != nil {
		return FieldErr(FieldAllowHosts, "%v", err)
	}
	if len(r.AllowHosts) > 0 && r.NetBytes < 1 {
		return FieldErr(FieldNetBytes, "must be larger than 0")
	}
	if err := r.checkSecrets(); err != nil {
		return err
	}
	if err := r.checkReturnFiles(); err != nil {
		return err
	}
	if err := r.checkPreload(); err != nil {
		return err
	}
	if r.Seccomp != nil && len(r.Seccomp.Syscalls) == 0 {
		return FieldErr(FieldSeccomp, "has no rules: boxer never runs without a seccomp filter")
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
			return FieldErr(FieldCommand, "is for an image: with {lang}, the program is the code")
		}
	case len(r.Code) > 0:
		return FieldErr(FieldCode, "needs {lang}; without it, {image} and {command} say what runs")
	case r.Image == "":
		return FieldErr(FieldLang, "is required, or {image} with {command}: nothing to run")
	case len(r.Args) == 0:
		return FieldErr(FieldCommand, "is required with {image} (or give {lang}): nothing to run")
	}
	return nil
}

// CheckEnv checks one KEY=value of a request's environment.
func CheckEnv(kv string) error {
	k, _, ok := strings.Cut(kv, "=")
	if !ok || k == "" {
		return FieldErr(FieldEnv, "%q must be NAME=VALUE", kv)
	}
	for i, c := range k {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return FieldErr(FieldEnv, "%q: %q is not a valid variable name", kv, k)
		}
	}
	return nil
}

// checkFiles: what goes into /workspace fits, and the host directories are
// directories.
func (r Request) checkFiles() error {
	if r.CopyOut != "" {
		if st, err := os.Stat(r.CopyOut); err == nil && !st.IsDir() {
			return FieldErr(FieldCopyOut, "%s exists and is not a directory", r.CopyOut)
		}
	}
	if r.CopyIn != "" {
		if st, err := os.Stat(r.CopyIn); err != nil || !st.IsDir() {
			return FieldErr(FieldCopyIn, "%s is not a directory", r.CopyIn)
		}
	}
	var size int64
	for name, data := range r.Files {
		if !filepath.IsLocal(name) || strings.ContainsRune(name, 0) {
			return FieldErr(FieldFiles, "%q must be a relative path inside /workspace", name)
		}
		size += int64(len(data))
	}
	if size > r.TmpBytes {
		return FieldErr(FieldFiles, "hold %d bytes, more than the workspace's %d: raise {tmp_size}", size, r.TmpBytes)
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
