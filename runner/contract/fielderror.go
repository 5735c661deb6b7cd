package contract

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/docker/go-units"
)

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
	FieldAllowHosts  = "allow_hosts"
	FieldNetBytes    = "net_bytes"
	FieldSecrets     = "secrets"
	FieldSeccomp     = "seccomp_profile"
	FieldFiles       = "files"
	FieldCopyIn      = "copy_in"
	FieldCopyOut     = "copy_out"
	FieldReturnFiles = "return_files"
	FieldReturnBytes = "return_bytes"
	FieldCount       = "count"
)

// FieldError is a request boxer refuses: Field names the field at fault and
// Message says what it accepts. errors.Is(err, ErrInvalid) holds for it.
type FieldError struct {
	Field   string
	Message string
	// Forbidden: the field is well-formed but asks for more than the
	// operator permits (HTTP 403 rather than 400).
	Forbidden bool
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
		FieldPids, FieldTmpSize, FieldOutputLimit, FieldUser, FieldRuntime, FieldNetwork, FieldAllowHosts, FieldNetBytes, FieldSeccomp, FieldFiles,
		FieldCopyIn, FieldCopyOut, FieldReturnFiles, FieldReturnBytes, FieldIdle, FieldLifetime, FieldSession}
}

// Is makes a FieldError an ErrInvalid.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

// FieldErr is a FieldError about field, its message formatted.
func FieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

func forbidden(field, format string, args ...any) *FieldError {
	e := FieldErr(field, format, args...)
	e.Forbidden = true
	return e
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
	// --cpus is read by strconv.ParseFloat, which takes "NaN" and "Inf":
	// neither is a limit, and NaN passes every comparison.
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return FieldErr(field, "must be a number, not %g", v)
	}
	if v < least {
		return FieldErr(field, "%s, not %s", msg, formatLimit(field, v))
	}
	return nil
}

// formatLimit writes a limit's value the way a caller writes it.
func formatLimit(field string, v float64) string {
	switch field {
	case FieldTimeout, FieldIdle, FieldLifetime:
		return time.Duration(v).String()
	case FieldMemory, FieldTmpSize, FieldOutputLimit:
		if v < 0 {
			return fmt.Sprintf("%g", v)
		}
		return units.BytesSize(v)
	}
	return fmt.Sprintf("%g", v)
}
