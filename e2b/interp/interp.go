// Package interp serves E2B's code interpreter (port 49999 of E2B's
// code-interpreter template): /execute runs a cell and streams its
// events, /contexts makes, lists, restarts and removes code contexts.
//
// It runs on the sandbox's python session interpreter: each E2B context is
// a runner.Cell context of it, a namespace, a working directory and an
// execution count of its own; the default context is the session's own
// namespace, the one plain session calls share. A bash context is a bash
// of its own that the interpreter starts (runner.CellBash), as E2B's
// template runs Jupyter's bash kernel, and a javascript or typescript
// context a node of its own (runner.CellJavaScript, CellTypeScript), as
// its javascript kernel; a cell of one of these with no context runs in
// the sandbox's default context of its language, made on first use.
//
// The E2B server (package e2b) routes port 49999 here, having found and
// authenticated the sandbox: it is this package's Host, and keeps each
// sandbox's contexts in its record (Server.Contexts, Server.Adopt).
package interp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/boxer-dev/boxer/runner"
)

const (
	// defaultCellTimeout bounds a cell when the operator sets no maximum:
	// E2B's cells have no timeout of the server's, only the client's,
	// which ends the request.
	defaultCellTimeout = time.Hour
	// opTimeout bounds making, restarting and removing a context.
	opTimeout = 30 * time.Second
	// defaultCwd is where E2B's contexts start.
	defaultCwd = "/home/user"
	// nodePreset is the preset whose image has node (the code
	// interpreter's javascript and typescript contexts).
	nodePreset = "python-data"
)

// Host is what the interpreter needs of the E2B server that holds the
// sandboxes.
type Host interface {
	// Sandbox is the sandbox the server authenticated a request for,
	// from the request's context.
	Sandbox(ctx context.Context) Sandbox
	// Held says whether the server still holds sandbox id: the contexts
	// of one it does not are forgotten.
	Held(id string) bool
	// WriteError answers an error in E2B's form, WriteJSON anything
	// else, as the server's other answers.
	WriteError(w http.ResponseWriter, code int, msg string)
	WriteJSON(w http.ResponseWriter, code int, v any)
	// TooLarge says what bounds a request body of limit bytes.
	TooLarge(limit int64) string
}

// Sandbox is what the interpreter knows of the sandbox a request is for.
type Sandbox struct {
	ID, Caller string
	// Lang is its preset, Image the image its template names ("": the
	// preset's).
	Lang, Image string
	// Env is set for every cell.
	Env map[string]string
	// Killed says whether a caller killed it, before its session ended.
	Killed func() bool
	// Persist keeps its record, with its contexts (Server.Contexts), for
	// the next server.
	Persist func()
}

// Runner runs a sandbox's cells: runner.Runner's session call.
type Runner interface {
	RunInSession(ctx context.Context, id, caller string, call runner.SessionCall, max runner.Maxima) (runner.Result, error)
}

// Config sets what the interpreter runs on and accepts.
type Config struct {
	Runner Runner
	// Max caps a cell, as a session call; its Timeout, if set, is a
	// cell's.
	Max runner.Maxima
	// MaxBody bounds a request body.
	MaxBody int64
}

// Server serves the code interpreter and holds each sandbox's contexts.
type Server struct {
	host Host
	cfg  Config

	mu sync.Mutex
	// bySandbox holds each sandbox's contexts, the default one first.
	bySandbox map[string][]CodeContext
}

// New returns the interpreter of host's sandboxes.
func New(host Host, cfg Config) *Server {
	return &Server{host: host, cfg: cfg}
}

// Handler serves the code interpreter (port 49999): /execute and
// /contexts on the sandbox's python interpreter.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { s.host.WriteJSON(w, http.StatusOK, "OK") })
	mux.HandleFunc("POST /execute", s.execute)
	mux.HandleFunc("GET /contexts", func(w http.ResponseWriter, r *http.Request) {
		list := s.contexts(s.host.Sandbox(r.Context()))
		wire := make([]wireContext, len(list))
		for i, c := range list {
			wire[i] = c.wire()
		}
		s.host.WriteJSON(w, http.StatusOK, wire)
	})
	mux.HandleFunc("POST /contexts", s.createContext)
	mux.HandleFunc("DELETE /contexts/{id}", s.removeContext)
	mux.HandleFunc("POST /contexts/{id}/restart", s.restartContext)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.host.WriteError(w, http.StatusNotFound, fmt.Sprintf("%s %s: the code interpreter serves POST /execute, GET and POST /contexts, DELETE /contexts/{id} and POST /contexts/{id}/restart", r.Method, r.URL.Path))
	})
	return mux
}

// checkLanguage returns the context language a request's names (python
// when it names none), or refuses one the interpreter does not run.
func checkLanguage(lang string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(lang)) {
	case "", runner.CellPython:
		return runner.CellPython, nil
	case runner.CellBash:
		return runner.CellBash, nil
	case "js", runner.CellJavaScript:
		return runner.CellJavaScript, nil
	case "ts", runner.CellTypeScript:
		return runner.CellTypeScript, nil
	}
	return "", fmt.Errorf("language %q is not available: boxer's code interpreter runs python, bash, javascript (js) and typescript (ts); leave language out for python", lang)
}

// checkEnv refuses variables the interpreter cannot set.
func checkEnv(env map[string]string) error {
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return fmt.Errorf("env_vars: %q: a variable's name must not be empty or hold '=' or NUL, its value must not hold NUL", k)
		}
	}
	return nil
}

// decodeBody reads a JSON body into v, refusing unknown fields by name;
// false means it answered.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	limit := s.cfg.MaxBody
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			s.host.WriteError(w, http.StatusRequestEntityTooLarge, s.host.TooLarge(limit))
		} else {
			s.host.WriteError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		}
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		s.host.WriteError(w, http.StatusBadRequest, "the request body: "+strings.TrimPrefix(err.Error(), "json: "))
		return false
	}
	return true
}

// writeRunnerError answers a call that did not run.
func (s *Server) writeRunnerError(w http.ResponseWriter, sb Sandbox, err error) {
	var fe *runner.FieldError
	var paused *runner.SessionPausedError
	switch {
	case errors.As(err, &fe):
		s.host.WriteError(w, http.StatusBadRequest, fe.Error())
	case errors.As(err, &paused):
		s.host.WriteError(w, http.StatusConflict, fmt.Sprintf("sandbox %s is paused: resume it (Sandbox.connect) first", sb.ID))
	case errors.Is(err, runner.ErrSessionNotFound):
		s.host.WriteJSON(w, http.StatusBadGateway, map[string]any{"sandboxId": sb.ID, "message": err.Error(), "code": http.StatusBadGateway})
	default:
		s.host.WriteError(w, http.StatusInternalServerError, err.Error())
	}
}

// newUUID makes a random (version 4) UUID, the form of E2B's context IDs.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
