package contract

import (
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ExitFacts are what is known of a sandbox once its program has ended.
type ExitFacts struct {
	// Status is the exit status containerd reports: the program's code, or
	// 128+N for a death by signal N (the shim reports it like a shell).
	Status uint32
	// TimedOut and interrupted say that boxer killed the sandbox, at the
	// deadline or because its caller went away.
	TimedOut, Interrupted bool
	// OOMKills is the sandbox cgroup's OOM kill counter.
	OOMKills uint64
}

// outcome is how a run ended, as the Result says it.
type outcome struct {
	Status string
	Code   int
	Signal string
}

// Classify tells how a run ended from its facts. A program that exits with
// 128+N by itself reads as killed by signal N: containerd's shim reports
// both the same way. OOM is never guessed from 137: the cgroup's counter
// decides.
func Classify(f ExitFacts) outcome {
	o := outcome{Status: StatusExited, Code: int(f.Status)}
	if o.Code > 128 && o.Code <= 128+64 {
		o.Signal = unix.SignalName(syscall.Signal(o.Code - 128))
		o.Status = StatusKilled
	}
	switch {
	case f.Interrupted:
		o.Status = StatusKilled
	case f.TimedOut:
		o.Status, o.Code = StatusTimeout, ExitTimeout
	case f.OOMKills > 0 && o.Code == ExitOOM:
		o.Status = StatusOOM
	}
	return o
}

// ExecFailure tells, from a runtime's failure to create or start a
// sandbox, docker's 126 (the command cannot be executed) or 127 (not
// found), with the runtime's own words; ok is false for any other failure.
//
// runc and runsc report these only as text, through containerd's gRPC:
// there is no typed error to test, so their exec errors are matched here,
// as docker does, and nowhere else in boxer. The messages each runtime
// gives are in TestExecFailure.
func ExecFailure(msg string) (code int, detail string, ok bool) {
	i := -1
	for _, marker := range []string{"exec: ", "error finding executable ", "failed to load "} {
		if i = strings.Index(msg, marker); i >= 0 {
			break
		}
	}
	if i < 0 && !strings.Contains(msg, "exec format error") {
		return 0, "", false
	}
	detail = msg
	if i >= 0 {
		detail = strings.TrimSuffix(msg[i:], ": unknown")
	}
	switch {
	case strings.Contains(msg, "not found") || strings.Contains(msg, "no such file or directory"):
		return ExitNotFound, detail, true
	case strings.Contains(msg, "permission denied") || strings.Contains(msg, "exec format error") || strings.Contains(msg, "is a directory"):
		return ExitCannotExec, detail, true
	}
	return 0, "", false
}

// initExecPrefix starts the line boxer-init writes on stderr when it
// cannot execute the program (init/boxer-init.c).
const initExecPrefix = "boxer-init: "

// InitExecFailure tells, from how a program ended and its output, that
// boxer-init could not execute it: then the status is 126 or 127, stdout
// is empty and stderr is boxer-init's one line, in the runtime's words
// (execFailure reads them as it reads the runtime's). The program never
// ran; were it to forge this, it would only change how its own result is
// told.
func InitExecFailure(status uint32, stdout, stderr string) (detail string, ok bool) {
	line, ok := strings.CutPrefix(stderr, initExecPrefix)
	if !ok || stdout != "" || strings.IndexByte(line, '\n') != len(line)-1 {
		return "", false
	}
	code, detail, ok := ExecFailure(strings.TrimSuffix(line, "\n"))
	if !ok || uint32(code) != status {
		return "", false
	}
	return detail, true
}
