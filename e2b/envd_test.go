package e2b

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	pb "github.com/boxer-dev/boxer/e2b/envdspec/process"
	"github.com/boxer-dev/boxer/runner"
)

func TestSandboxPath(t *testing.T) {
	tests := []struct {
		name, in, want string
		refused        bool
	}{
		{name: "empty is the home", in: "", want: "/home/user"},
		{name: "tilde", in: "~", want: "/home/user"},
		{name: "under tilde", in: "~/a/b", want: "/home/user/a/b"},
		{name: "relative", in: "dir/a.txt", want: "/home/user/dir/a.txt"},
		{name: "workspace", in: "/workspace/x", want: "/workspace/x"},
		{name: "tmp itself", in: "/tmp", want: "/tmp"},
		{name: "cleaned", in: "/tmp/a/../b//c", want: "/tmp/b/c"},
		{name: "outside", in: "/etc/passwd", refused: true},
		{name: "dotdot out", in: "/home/user/../../etc/passwd", refused: true},
		{name: "relative dotdot out", in: "../../etc", refused: true},
		{name: "a root's prefix", in: "/tmpfoo", refused: true},
		{name: "root", in: "/", refused: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sandboxPath(tc.in)
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), "only under /workspace, /tmp and /home/user") {
					t.Fatalf("sandboxPath(%q) = %q, %v; want a refusal naming the roots", tc.in, got, err)
				}
				if ce := new(connect.Error); !errors.As(func() error { _, err := rpcPath(tc.in); return err }(), &ce) || ce.Code() != connect.CodePermissionDenied {
					t.Errorf("rpcPath(%q) is not permission_denied", tc.in)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("sandboxPath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func basic(user string) http.Header {
	h := http.Header{}
	h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":")))
	return h
}

func TestRPCUser(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
		code   connect.Code // 0: accepted
	}{
		{name: "none is the default user", header: http.Header{}},
		{name: "user", header: basic("user")},
		{name: "empty user", header: basic("")},
		{name: "root", header: basic("root"), code: connect.CodePermissionDenied},
		{name: "another", header: basic("alice"), code: connect.CodeUnauthenticated},
		{name: "bearer", header: http.Header{"Authorization": {"Bearer x"}}, code: connect.CodeUnauthenticated},
		{name: "not base64", header: http.Header{"Authorization": {"Basic !!"}}, code: connect.CodeUnauthenticated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := rpcUser(tc.header)
			if tc.code == 0 {
				if err != nil {
					t.Fatalf("rpcUser = %v, want nil", err)
				}
				return
			}
			if got := connect.CodeOf(err); got != tc.code {
				t.Errorf("rpcUser = %v (%v), want %v", err, got, tc.code)
			}
		})
	}
	if err := rpcUser(basic("root")); !strings.Contains(err.Error(), "boxer sandboxes have no root") {
		t.Errorf("root's error = %q, want it to say boxer sandboxes have no root", err)
	}
}

func TestRPCError(t *testing.T) {
	tests := []struct {
		err  error
		want connect.Code
	}{
		{runner.ErrProcessNotFound, connect.CodeNotFound},
		{fmt.Errorf("/tmp/x: %w", runner.ErrFileNotFound), connect.CodeNotFound},
		{fmt.Errorf("/tmp/x: %w", runner.ErrFileExists), connect.CodeAlreadyExists},
		{runner.ErrSessionFull, connect.CodeResourceExhausted},
		{runner.ErrSessionNotFound, connect.CodeUnavailable},
		{&runner.SessionEndedError{ID: "bxs-1", Reason: "expired"}, connect.CodeUnavailable},
		{&runner.FieldError{Field: "path", Message: "is bad"}, connect.CodeInvalidArgument},
		{&runner.FieldError{Field: "path", Message: "is not allowed", Forbidden: true}, connect.CodePermissionDenied},
		{fmt.Errorf("running: %w", context.DeadlineExceeded), connect.CodeDeadlineExceeded},
		{errors.New("something else"), connect.CodeInternal},
	}
	for _, tc := range tests {
		if got := connect.CodeOf(rpcError(tc.err)); got != tc.want {
			t.Errorf("rpcError(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestEndEvent(t *testing.T) {
	code := func(n int) *int { return &n }
	tests := []struct {
		name string
		info runner.ProcessInfo
		want string
	}{
		{name: "success", info: runner.ProcessInfo{ExitCode: code(0)}, want: "0 true exit status 0 <nil>"},
		{name: "failure", info: runner.ProcessInfo{ExitCode: code(3)}, want: "3 true exit status 3 exit status 3"},
		{name: "killed", info: runner.ProcessInfo{ExitCode: code(137)}, want: "137 true exit status 137 exit status 137"},
		{name: "could not run", info: runner.ProcessInfo{ExitCode: code(127), Error: "no such file"}, want: "127 false error no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := endEvent(tc.info)
			errText := "<nil>"
			if e.Error != nil {
				errText = *e.Error
			}
			if got := strings.TrimSpace(fmt.Sprintln(e.ExitCode, e.Exited, e.Status, errText)); got != tc.want {
				t.Errorf("endEvent = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestProcessRequest(t *testing.T) {
	sb := &sandbox{Env: map[string]string{"A": "sandbox", "B": "b"}}
	cwd := "work"
	req, err := processRequest(sb, &pb.StartRequest{Process: &pb.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-c", "x"}, Envs: map[string]string{"A": "request"}, Cwd: &cwd}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(fmt.Sprintln(req.Args, req.Env, req.Cwd, req.Stdin, req.PTY == nil)), "[/bin/bash -c x] [A=sandbox B=b A=request] /home/user/work true true"; got != want {
		t.Errorf("processRequest = %q, want %q", got, want)
	}
	if _, err := processRequest(sb, &pb.StartRequest{Process: &pb.ProcessConfig{}}); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("no cmd: %v, want invalid_argument", err)
	}
}

func TestKeepaliveEvery(t *testing.T) {
	for in, want := range map[string]time.Duration{"": keepaliveDefault, "7": 7 * time.Second, "x": keepaliveDefault, "0": keepaliveDefault, "-3": keepaliveDefault} {
		if got := keepaliveEvery(in); got != want {
			t.Errorf("keepaliveEvery(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestFilesRefused: what /files refuses before it reaches the sandbox.
func TestFilesRefused(t *testing.T) {
	s := &Server{}
	h := s.envdHandler()
	tests := []struct {
		name, method, url string
		header            http.Header
		code              int
		says              string
	}{
		{name: "root by query", method: "GET", url: "/files?path=/tmp/a&username=root", code: 403, says: "no root"},
		{name: "root by header", method: "POST", url: "/files?path=/tmp/a", header: basic("root"), code: 403, says: "no root"},
		{name: "another user", method: "GET", url: "/files?path=/tmp/a&username=alice", code: 401, says: "their one user"},
		{name: "outside", method: "GET", url: "/files?path=/etc/passwd", code: 403, says: "only under /workspace"},
		{name: "metadata not a token", method: "POST", url: "/files?path=/tmp/a", header: http.Header{"X-Metadata-Bad Key": {"me"}, "Content-Type": {"application/octet-stream"}}, code: 400, says: "metadata"},
		{name: "metadata not printable", method: "POST", url: "/files?path=/tmp/a", header: http.Header{"X-Metadata-Owner": {"me\x01"}, "Content-Type": {"application/octet-stream"}}, code: 400, says: "metadata"},
		{name: "octet-stream without a path", method: "POST", url: "/files", header: http.Header{"Content-Type": {"application/octet-stream"}}, code: 400, says: "path is required"},
		{name: "another type", method: "POST", url: "/files?path=/tmp/a", header: http.Header{"Content-Type": {"text/plain"}}, code: 400, says: "multipart/form-data"},
		{name: "another endpoint", method: "POST", url: "/init", code: 404, says: "not part of envd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.url, strings.NewReader(""))
			for k, v := range tc.header {
				req.Header[k] = v
			}
			req = req.WithContext(withSandbox(req.Context(), &sandbox{ID: "bxs-0"}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.says) {
				t.Errorf("%s %s = %d %s, want %d saying %q", tc.method, tc.url, rec.Code, rec.Body, tc.code, tc.says)
			}
		})
	}
}
