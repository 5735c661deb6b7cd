// Package server offers runner.Run over HTTP (boxer serve) and over the
// Model Context Protocol on stdio (boxer mcp). There is no second run path:
// both turn their input into a runner.Request.
package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/runner"
)

// RunRequest is the body of POST /v1/runs: the run flags, plus files
// written into /workspace and stdin.
type RunRequest struct {
	Lang    string            `json:"lang,omitempty" jsonschema:"language preset: python, python-data, javascript, typescript or bash"`
	Image   string            `json:"image,omitempty" jsonschema:"image reference; overrides the preset's, or runs command"`
	Command []string          `json:"command,omitempty" jsonschema:"argv to run in image, without lang"`
	Env     map[string]string `json:"env,omitempty" jsonschema:"environment variables"`
	User    string            `json:"user,omitempty" jsonschema:"UID:GID inside the sandbox"`
	Network string            `json:"network,omitempty" jsonschema:"none"`
	Input
}

// Input is what the HTTP request and the MCP run_code tool share: the
// program, its input, and the limits a caller may set.
type Input struct {
	Code        string            `json:"code,omitempty" jsonschema:"the program to run"`
	Stdin       string            `json:"stdin,omitempty" jsonschema:"the program's standard input"`
	Files       map[string]string `json:"files,omitempty" jsonschema:"files written into /workspace (the working directory) before the run: relative path to content"`
	Timeout     string            `json:"timeout,omitempty" jsonschema:"wall clock limit, like 30s"`
	Memory      string            `json:"memory,omitempty" jsonschema:"memory limit, like 256m"`
	CPUs        float64           `json:"cpus,omitempty" jsonschema:"CPU quota in cores"`
	Pids        int64             `json:"pids,omitempty" jsonschema:"process and thread cap"`
	TmpSize     string            `json:"tmp_size,omitempty" jsonschema:"size of /tmp and /workspace, like 64m"`
	OutputLimit string            `json:"output_limit,omitempty" jsonschema:"bytes kept per output stream, like 1m"`
	Runtime     string            `json:"runtime,omitempty" jsonschema:"runc (default) or runsc (gVisor)"`
}

// Maxima are the operator's caps on what a caller may ask for.
type Maxima struct {
	Timeout     time.Duration
	MemoryBytes int64
	CPUs        float64
	Pids        int64
	TmpBytes    int64
	OutputLimit int64
}

// FieldError is a request error that names the field at fault.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"error"`
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// ToRunner validates rr against the maxima and returns the runner request.
func (rr RunRequest) ToRunner(max Maxima) (runner.Request, error) {
	req := runner.Request{
		Lang:    rr.Lang,
		Code:    []byte(rr.Code),
		Image:   rr.Image,
		Args:    rr.Command,
		CPUs:    rr.CPUs,
		Pids:    rr.Pids,
		Runtime: rr.Runtime,
		Network: rr.Network,
	}
	if rr.Lang == "" && len(rr.Command) == 0 {
		return req, fieldErr("lang", "give lang with code, or image with command")
	}
	for k, v := range rr.Env {
		req.Env = append(req.Env, k+"="+v)
	}
	if rr.Stdin != "" {
		req.Stdin = strings.NewReader(rr.Stdin)
	}
	if len(rr.Files) > 0 {
		req.Files = make(map[string][]byte, len(rr.Files))
		for k, v := range rr.Files {
			req.Files[k] = []byte(v)
		}
	}
	var err error
	if rr.Timeout != "" {
		if req.Timeout, err = time.ParseDuration(rr.Timeout); err != nil || req.Timeout <= 0 {
			return req, fieldErr("timeout", "want a positive duration like 30s, got %q", rr.Timeout)
		}
	}
	for _, s := range []struct {
		field, value string
		dst          *int64
	}{{"memory", rr.Memory, &req.MemoryBytes}, {"tmp_size", rr.TmpSize, &req.TmpBytes}, {"output_limit", rr.OutputLimit, &req.OutputLimit}} {
		if s.value == "" {
			continue
		}
		if *s.dst, err = runner.ParseSize(s.value); err != nil || *s.dst == 0 {
			return req, fieldErr(s.field, "want a size like 256m, got %q", s.value)
		}
	}
	if rr.CPUs < 0 {
		return req, fieldErr("cpus", "must be positive")
	}
	if rr.Pids < 0 {
		return req, fieldErr("pids", "must be positive")
	}
	if rr.User != "" {
		if req.UID, req.GID, err = runner.ParseUser(rr.User); err != nil {
			return req, fieldErr("user", "%v", err)
		}
		req.UserSet = true
	}
	// Unset limits take runner's defaults, lowered to the maxima; set ones
	// above a maximum are refused.
	if err := capLimit("timeout", (*int64)(&req.Timeout), int64(runner.DefaultTimeout), int64(max.Timeout)); err != nil {
		return req, err
	}
	for _, c := range []struct {
		field    string
		v        *int64
		def, max int64
	}{
		{"memory", &req.MemoryBytes, runner.DefaultMemory, max.MemoryBytes},
		{"pids", &req.Pids, runner.DefaultPids, max.Pids},
		{"tmp_size", &req.TmpBytes, runner.DefaultTmpSize, max.TmpBytes},
		{"output_limit", &req.OutputLimit, runner.DefaultOutputLimit, max.OutputLimit},
	} {
		if err := capLimit(c.field, c.v, c.def, c.max); err != nil {
			return req, err
		}
	}
	if max.CPUs > 0 {
		if req.CPUs > max.CPUs {
			return req, fieldErr("cpus", "%g is above this server's maximum of %g", req.CPUs, max.CPUs)
		}
		if req.CPUs == 0 {
			req.CPUs = min(runner.DefaultCPUs, max.CPUs)
		}
	}
	return req, nil
}

// capLimit fills an unset limit with min(def, max) and refuses a set one
// above max (0: no maximum).
func capLimit(field string, v *int64, def, max int64) error {
	if max <= 0 {
		return nil
	}
	if *v == 0 {
		*v = min(def, max)
		return nil
	}
	if *v > max {
		return fieldErr(field, "%d is above this server's maximum of %d", *v, max)
	}
	return nil
}
