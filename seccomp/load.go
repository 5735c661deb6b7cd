package seccomp

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"runtime"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// dockerRule is a syscall rule as Docker's profile format writes it: an OCI
// rule plus conditions on capabilities and architectures.
type dockerRule struct {
	specs.LinuxSyscall
	Includes *dockerFilter `json:"includes,omitempty"`
	Excludes *dockerFilter `json:"excludes,omitempty"`
}

type dockerFilter struct {
	Caps   []string `json:"caps,omitempty"`
	Arches []string `json:"arches,omitempty"`
}

type profileFile struct {
	DefaultAction   specs.LinuxSeccompAction `json:"defaultAction"`
	DefaultErrnoRet *uint                    `json:"defaultErrnoRet,omitempty"`
	Architectures   []specs.Arch             `json:"architectures,omitempty"`
	Syscalls        []dockerRule             `json:"syscalls"`
}

// ProfileError is a seccomp profile Load refuses: the file at Path could
// not be read (Op "reading") or parsed ("parsing"), or has nothing to
// apply ("checking").
type ProfileError struct {
	Op   string
	Path string
	Err  error
}

func (e *ProfileError) Error() string {
	return e.Op + " seccomp profile " + e.Path + ": " + e.Err.Error()
}

func (e *ProfileError) Unwrap() error { return e.Err }

// Load reads an OCI (runtime-spec) or Docker seccomp profile from path.
// Docker rules that apply only with a capability are dropped (sandboxes have
// none), as are rules for other architectures. A profile without rules is
// refused: boxer never runs without seccomp.
func Load(path string) (*specs.LinuxSeccomp, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		// The path is the ProfileError's: keep the *fs.PathError's reason.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &ProfileError{Op: "reading", Path: path, Err: err}
	}
	var f profileFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, &ProfileError{Op: "parsing", Path: path, Err: err}
	}
	p := &specs.LinuxSeccomp{
		DefaultAction:   f.DefaultAction,
		DefaultErrnoRet: f.DefaultErrnoRet,
		Architectures:   f.Architectures,
	}
	for _, r := range f.Syscalls {
		if r.Includes != nil && (len(r.Includes.Caps) > 0 || len(r.Includes.Arches) > 0 && !slices.Contains(r.Includes.Arches, runtime.GOARCH)) {
			continue
		}
		if r.Excludes != nil && slices.Contains(r.Excludes.Arches, runtime.GOARCH) {
			continue
		}
		p.Syscalls = append(p.Syscalls, r.LinuxSyscall)
	}
	if p.DefaultAction == "" || len(p.Syscalls) == 0 {
		return nil, &ProfileError{Op: "checking", Path: path, Err: errors.New("it needs a defaultAction and syscall rules: boxer never runs without seccomp")}
	}
	if len(p.Architectures) == 0 {
		p.Architectures = nativeArches()
	}
	return p, nil
}
