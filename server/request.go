// Package server offers runner.Run over HTTP (boxer serve) and over the
// Model Context Protocol on stdio (boxer mcp). There is no second run path:
// both turn their input into a runner.Request and normalize it there, and
// both use the request's own field names (docs/http.md).
package server

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/boxer-dev/boxer/runner"
)

// fieldFilesBase64 is the field of binary files in; the runner sees them as
// files.
const fieldFilesBase64 = "files_base64"

// fieldStdin is the field of a program's input.
const fieldStdin = "stdin"

// RunRequest is the body of POST /v1/runs: the run flags, plus files
// written into /workspace and stdin.
type RunRequest struct {
	Lang    string            `json:"lang,omitempty" jsonschema:"language preset (see list_languages); its program is code"`
	Image   string            `json:"image,omitempty" jsonschema:"image reference; overrides the preset's, or runs command"`
	Command []string          `json:"command,omitempty" jsonschema:"argv to run in image, without lang"`
	Env     map[string]string `json:"env,omitempty" jsonschema:"environment variables"`
	User    string            `json:"user,omitempty" jsonschema:"UID:GID inside the sandbox"`
	Network string            `json:"network,omitempty" jsonschema:"network mode"`
	// Preload false opts out of a preloaded interpreter; unset or true
	// takes the server's preload list for the language.
	Preload *bool `json:"preload,omitempty"`
	Input
}

// Input is what the HTTP request and the MCP run_code tool share: the
// program, its input, and the limits a caller may set. cpus and pids are
// pointers so that an explicit 0 is refused rather than taken as unset.
type Input struct {
	Code        string            `json:"code,omitempty" jsonschema:"the program to run"`
	Stdin       string            `json:"stdin,omitempty" jsonschema:"the program's standard input"`
	Files       map[string]string `json:"files,omitempty" jsonschema:"files written into /workspace (the working directory) before the run: relative path to content"`
	FilesBase64 map[string]string `json:"files_base64,omitempty" jsonschema:"binary files written into /workspace before the run: relative path to base64 (standard encoding) content"`
	ReturnFiles []string          `json:"return_files,omitempty" jsonschema:"globs relative to /workspace (like *.png or out/*.csv) of files the result carries back, base64, within the server's cap; images come back as image content over MCP"`
	Timeout     string            `json:"timeout,omitempty" jsonschema:"wall clock limit, like 30s"`
	Memory      string            `json:"memory,omitempty" jsonschema:"memory limit, like 256m"`
	CPUs        *float64          `json:"cpus,omitempty" jsonschema:"CPU quota in cores"`
	Pids        *int64            `json:"pids,omitempty" jsonschema:"process and thread cap"`
	TmpSize     string            `json:"tmp_size,omitempty" jsonschema:"size of /tmp and /workspace, like 64m"`
	OutputLimit string            `json:"output_limit,omitempty" jsonschema:"bytes kept per output stream, like 1m"`
	Runtime     string            `json:"runtime,omitempty" jsonschema:"OCI runtime: runc (default) or runsc (gVisor)"`
	AllowHosts  []string          `json:"allow_hosts,omitempty" jsonschema:"open network egress to these destinations only: HOST[:PORT] (a DNS name, *.domain, an IP or a CIDR; port 443 unless given, or a list like 80,443); within the operator's allowlist; empty: no network"`
	NetBytes    string            `json:"net_bytes,omitempty" jsonschema:"with allow_hosts: bytes in + out the run may move, like 5m"`
	Secrets     []string          `json:"secrets,omitempty" jsonschema:"secrets the program gets by name, from those the server holds: NAME (the file /run/secrets/NAME) or NAME,env (and the variable NAME); a secret of the server's injection rules is set as a header by the proxy instead and never enters the sandbox. Never a value"`
}

// Request decodes rr into a runner request normalized within max: a
// *runner.FieldError names the field at fault.
func (rr RunRequest) Request(max runner.Maxima) (runner.Request, error) {
	req, err := rr.decode(max)
	if err != nil {
		return req, err
	}
	return req.NormalizeWithin(max)
}

// decode turns rr into a runner request, not normalized yet.
func (rr RunRequest) decode(max runner.Maxima) (runner.Request, error) {
	req := runner.Request{
		Lang:       rr.Lang,
		Code:       []byte(rr.Code),
		Image:      rr.Image,
		Args:       rr.Command,
		Runtime:    rr.Runtime,
		Network:    rr.Network,
		AllowHosts: rr.AllowHosts,
		Secrets:    rr.Secrets,
		NoPreload:  rr.Preload != nil && !*rr.Preload,
	}
	for k, v := range rr.Env {
		req.Env = append(req.Env, k+"="+v)
	}
	if rr.Stdin != "" {
		req.Stdin = strings.NewReader(rr.Stdin)
	}
	var err error
	if req.Files, err = decodeFiles(rr.Files, rr.FilesBase64); err != nil {
		return req, err
	}
	req.ReturnFiles, req.ReturnBytes = rr.ReturnFiles, max.ReturnBytes
	if rr.Timeout != "" {
		if req.Timeout, err = runner.ParseTimeout(rr.Timeout); err != nil {
			return req, err
		}
	}
	for _, s := range []struct {
		field, value string
		dst          *int64
	}{{runner.FieldMemory, rr.Memory, &req.MemoryBytes}, {runner.FieldTmpSize, rr.TmpSize, &req.TmpBytes}, {runner.FieldOutputLimit, rr.OutputLimit, &req.OutputLimit}, {runner.FieldNetBytes, rr.NetBytes, &req.NetBytes}} {
		if s.value == "" {
			continue
		}
		if *s.dst, err = runner.ParseSizeLimit(s.field, s.value); err != nil {
			return req, err
		}
	}
	if rr.CPUs != nil {
		if req.CPUs = *rr.CPUs; req.CPUs == 0 {
			return req, runner.CheckLimit(runner.FieldCPUs, 0)
		}
	}
	if rr.Pids != nil {
		if req.Pids = *rr.Pids; req.Pids == 0 {
			return req, runner.CheckLimit(runner.FieldPids, 0)
		}
	}
	if rr.User != "" {
		if req.UID, req.GID, err = runner.ParseUser(rr.User); err != nil {
			return req, err
		}
		req.UserSet = true
	}
	return req, nil
}

// decodeFiles merges text files and base64 ones; nil when there are none.
func decodeFiles(text, b64 map[string]string) (map[string][]byte, error) {
	if len(text)+len(b64) == 0 {
		return nil, nil
	}
	files := make(map[string][]byte, len(text)+len(b64))
	for k, v := range text {
		files[k] = []byte(v)
	}
	for k, v := range b64 {
		if _, ok := files[k]; ok {
			return nil, &runner.FieldError{Field: fieldFilesBase64, Message: fmt.Sprintf("%q is in files too: give each file once", k)}
		}
		data, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return nil, &runner.FieldError{Field: fieldFilesBase64, Message: fmt.Sprintf("%q: not standard base64: %v", k, err)}
		}
		files[k] = data
	}
	return files, nil
}
