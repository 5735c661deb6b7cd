package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"strings"
	"time"
)

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
	// Egress: the sandbox has a link out (its allowlist and quota are
	// delivered): never the shape of a sandbox without network.
	Egress bool
	// Secrets are the request's secrets, sorted: they decide the
	// sandbox's /run mount, variables and trust bundle.
	Secrets string
	// Preload is the modules a sandbox made ahead imports, joined with
	// commas (NoPreload has emptied it).
	Preload string
}

// Shape returns the shape of a normalized request.
func (r Request) Shape() Shape {
	s := Shape{
		Lang: r.Lang, Image: r.ImageName(), Runtime: r.Runtime, Network: r.Network,
		Args: strings.Join(r.Argv(), "\x00"), Env: strings.Join(r.Env, "\x00"),
		UID: r.UID, GID: r.GID,
		MemoryBytes: r.MemoryBytes, CPUs: r.CPUs, Pids: r.Pids, TmpBytes: r.TmpBytes,
		Egress: r.HasEgress(), Secrets: r.secretsShape(), Preload: strings.Join(r.PreloadModules(), ","),
	}
	if r.Seccomp != nil {
		data, _ := json.Marshal(r.Seccomp)
		sum := sha256.Sum256(data)
		s.Seccomp = hex.EncodeToString(sum[:])
	}
	return s
}

// Delivery is what a sandbox gets of its request when the program starts,
// rather than when the sandbox is made: the program's code and input,
// files, the time and output it may take, where its output and files go.
// Every field of Request is in its Shape or here, under the same name
// (TestShapeCoversRequest).
type Delivery struct {
	Code        []byte
	Stdin       io.Reader
	Files       map[string][]byte
	CopyIn      string
	CopyOut     string
	Timeout     time.Duration
	OutputLimit int64
	Stdout      io.Writer
	Stderr      io.Writer
	AllowHosts  []string
	NetBytes    int64
	ReturnFiles []string
	ReturnBytes int64
}

// Delivery returns the delivery of a normalized request.
func (r Request) Delivery() Delivery {
	return Delivery{
		Code: r.Code, Stdin: r.Stdin, Files: r.Files, CopyIn: r.CopyIn, CopyOut: r.CopyOut,
		Timeout: r.Timeout, OutputLimit: r.OutputLimit, Stdout: r.Stdout, Stderr: r.Stderr,
		AllowHosts: r.AllowHosts, NetBytes: r.NetBytes, ReturnFiles: r.ReturnFiles, ReturnBytes: r.ReturnBytes,
	}
}

// HasEgress says whether the request has network egress.
func (r Request) HasEgress() bool { return len(r.AllowHosts) > 0 }

// ImageName is the image a request runs in: its own, or its preset's.
func (r Request) ImageName() string {
	if r.Image != "" || r.Lang == "" {
		return r.Image
	}
	p, _ := LookupPreset(r.Lang)
	return p.Image
}

// Argv is the argv a request runs: its preset's interpreter on the code
// file, or its command.
func (r Request) Argv() []string {
	if r.Lang == "" {
		return r.Args
	}
	p, _ := LookupPreset(r.Lang)
	return p.Args()
}

// PreloadModules is what a sandbox made ahead of a normalized request imports.
func (r Request) PreloadModules() []string {
	if r.NoPreload || !Preloadable(r.Lang) {
		return nil
	}
	return r.Preload
}
