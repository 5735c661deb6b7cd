package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// Caps on standbys: per shape and on the host (per namespace).
const (
	StandbyPerShape = 1
	StandbyTotal    = 4
	// DefaultStandbyIdle is how long a standby waits for a run.
	DefaultStandbyIdle = 5 * time.Minute
)

// StandbyEligible says whether req's sandbox may be made ahead: not one
// with secrets (their values would wait on the host for a run that may
// never come) or a link out (its allowlist is the run's own).
func StandbyEligible(req Request) bool {
	return len(req.Secrets) == 0 && !req.HasEgress()
}

// StandbyRequest is what of req a standby is made from: its shape, and
// nothing of what is delivered to the program (code, files, stdin).
func StandbyRequest(req Request) Request {
	return Request{
		Lang: req.Lang, Image: req.Image, Args: req.Args, Env: req.Env,
		MemoryBytes: req.MemoryBytes, CPUs: req.CPUs, Pids: req.Pids, TmpBytes: req.TmpBytes,
		UID: req.UID, GID: req.GID, UserSet: req.UserSet,
		Runtime: req.Runtime, Network: req.Network, Seccomp: req.Seccomp,
		Preload: req.Preload, NoPreload: req.NoPreload,
	}
}

// StandbyKey names a normalized request's shape in a label value.
func StandbyKey(req Request) string {
	data, _ := json.Marshal(req.Shape())
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:12])
}
