package e2b

// envd, served from the host: the Connect services and the plain HTTP the
// SDKs call on a sandbox's port 49983, their users, paths and errors.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"syscall"

	"connectrpc.com/connect"

	"github.com/boxer-dev/boxer/e2b/envdspec/filesystem/filesystemconnect"
	"github.com/boxer-dev/boxer/e2b/envdspec/process/processconnect"
	"github.com/boxer-dev/boxer/runner"
)

// envdUser is the one user of a boxer sandbox as E2B names it: the SDKs'
// default user, which boxer's sandbox user (runner.DefaultUID) stands for.
const envdUser = "user"

// envdHome is the sandbox user's home, E2B's default working directory
// and the base of relative paths.
const envdHome = runner.SessionHome

// envdRoots are where envd reads and writes, as runner's session files do.
var envdRoots = []string{"/workspace", "/tmp", runner.SessionHome}

// envdHandler serves envd: the Connect-RPC process and filesystem services
// and the HTTP /files and /health, on the sandbox sandboxFrom names.
func (s *Server) envdHandler() http.Handler {
	mux := http.NewServeMux()
	// The Connect services' bodies are capped; /files uploads are not
	// (streamed to the sandbox's files, they stop where its disk does).
	pp, ph := processconnect.NewProcessHandler(&processService{s: s}, s.envdOptions()...)
	mux.Handle(pp, s.capBody(ph))
	fp, fh := filesystemconnect.NewFilesystemHandler(&filesystemService{s: s, watchers: map[string]*watcher{}}, s.envdOptions()...)
	mux.Handle(fp, s.capBody(fh))
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		if err := s.runner.CheckSession(r.Context(), sandboxFrom(r.Context()).ID, sandboxFrom(r.Context()).Caller); err != nil {
			// As E2B's proxy answers for a sandbox gone: the SDKs read a
			// 502 as one that is not running.
			writeError(w, http.StatusBadGateway, "the sandbox is not running: "+err.Error())
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /files", s.downloadFile)
	mux.HandleFunc("POST /files", s.uploadFile)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("%s %s is not part of envd as boxer serves it: the process and filesystem services, /files and /health are (docs/e2b.md)", r.Method, r.URL.Path))
	})
	return mux
}

// errNoRoot answers a request made as root.
var errNoRoot = errors.New(`boxer sandboxes have no root: commands and files run as the sandbox's one user, "user" (leave the user option unset)`)

// checkUser checks the user a request runs as: name, from the
// Authorization header's Basic user (the SDKs' user option) or the
// username query parameter; "" is the default user.
func checkUser(name string) error {
	switch name {
	case "", envdUser:
		return nil
	case "root":
		return errNoRoot
	}
	return fmt.Errorf("user %q is not in boxer sandboxes: their one user is %q (leave the user option unset)", name, envdUser)
}

// basicUser reads the user of an Authorization: Basic header, as envd
// does (the password is empty).
func basicUser(h http.Header) (string, error) {
	auth := h.Get("Authorization")
	if auth == "" {
		return "", nil
	}
	enc, ok := strings.CutPrefix(auth, "Basic ")
	if !ok {
		return "", errors.New("the Authorization header names the user as Basic base64(user:), nothing else")
	}
	dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return "", errors.New("the Authorization header's Basic credentials are not base64")
	}
	user, _, _ := strings.Cut(string(dec), ":")
	return user, nil
}

// rpcUser checks the user of a Connect request.
func rpcUser(h http.Header) error {
	user, err := basicUser(h)
	if err != nil {
		return connect.NewError(connect.CodeUnauthenticated, err)
	}
	if err := checkUser(user); err != nil {
		if errors.Is(err, errNoRoot) {
			return connect.NewError(connect.CodePermissionDenied, err)
		}
		return connect.NewError(connect.CodeUnauthenticated, err)
	}
	return nil
}

// sandboxPath resolves a path as envd does for the sandbox user: "~" and
// relative paths from the home; the result must be under one of the
// roots, as boxer serves no other files of a sandbox.
func sandboxPath(p string) (string, error) {
	switch {
	case p == "" || p == "~":
		p = envdHome
	case strings.HasPrefix(p, "~/"):
		p = envdHome + p[1:]
	case !strings.HasPrefix(p, "/"):
		p = envdHome + "/" + p
	}
	clean := path.Clean(p)
	for _, r := range envdRoots {
		if clean == r || strings.HasPrefix(clean, r+"/") {
			return clean, nil
		}
	}
	return "", fmt.Errorf("%s: boxer sandboxes read and write files only under /workspace, /tmp and %s", clean, runner.SessionHome)
}

// rpcPath resolves a Connect request's path, or answers permission_denied.
func rpcPath(p string) (string, error) {
	abs, err := sandboxPath(p)
	if err != nil {
		return "", connect.NewError(connect.CodePermissionDenied, err)
	}
	return abs, nil
}

// badPath says whether err is the file system's refusal of a path the
// request named (a name too long, a FIFO nobody reads): the caller's
// error, answered 4xx with the path, not the server's.
func badPath(err error) bool {
	return errors.Is(err, syscall.ENAMETOOLONG) || errors.Is(err, syscall.ENXIO)
}

// rpcError tells a runner error in Connect's codes, as envd answers: the
// SDKs turn not_found into NotFoundError (exists() into false),
// already_exists into makeDir's false, unavailable into a sandbox gone.
func rpcError(err error) error {
	if err == nil {
		return nil
	}
	var ce *connect.Error
	var fe *runner.FieldError
	var ended *runner.SessionEndedError
	var limit *runner.LimitError
	switch {
	case errors.As(err, &ce):
		return err
	case errors.Is(err, context.Canceled):
		return connect.NewError(connect.CodeCanceled, err)
	case errors.Is(err, context.DeadlineExceeded):
		// A command's own timeout: E2B's SDKs make it a TimeoutError.
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	case errors.Is(err, runner.ErrSessionNotFound), errors.As(err, &ended):
		return connect.NewError(connect.CodeUnavailable, fmt.Errorf("the sandbox is not running: %w", err))
	case errors.Is(err, runner.ErrProcessNotFound), errors.Is(err, runner.ErrFileNotFound):
		return connect.NewError(connect.CodeNotFound, err)
	case errors.Is(err, runner.ErrFileExists):
		return connect.NewError(connect.CodeAlreadyExists, err)
	case errors.Is(err, runner.ErrSessionFull), errors.As(err, &limit):
		return connect.NewError(connect.CodeResourceExhausted, err)
	case badPath(err):
		return connect.NewError(connect.CodeInvalidArgument, err)
	case errors.As(err, &fe):
		if fe.Forbidden {
			return connect.NewError(connect.CodePermissionDenied, err)
		}
		return connect.NewError(connect.CodeInvalidArgument, err)
	}
	return connect.NewError(connect.CodeInternal, err)
}
