package e2b

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/boxer-dev/boxer/runner"
)

// The code interpreter (port 49999 of E2B's code-interpreter template) is
// served on the sandbox's python session interpreter: each E2B context is
// a runner.Cell context of it, a namespace, a working directory and an
// execution count of its own; the default context is the session's own
// namespace, the one plain session calls share. A bash context is a bash
// of its own that the interpreter starts (runner.CellBash), as E2B's
// template runs Jupyter's bash kernel, and a javascript or typescript
// context a node of its own (runner.CellJavaScript, CellTypeScript), as
// its javascript kernel; a cell of one of these with no context runs in
// the sandbox's default context of its language, made on first use.
const (
	// interpCellTimeout bounds a cell when the operator sets no maximum:
	// E2B's cells have no timeout of the server's, only the client's,
	// which ends the request.
	interpCellTimeout = time.Hour
	// interpOpTimeout bounds making, restarting and removing a context.
	interpOpTimeout = 30 * time.Second
	// defaultCwd is where E2B's contexts start.
	defaultCwd = "/home/user"
	// nodePreset is the preset whose image has node (the code
	// interpreter's javascript and typescript contexts).
	nodePreset = "python-data"
)

// codeContext is E2B's Context, as kept in the sandbox's record.
type codeContext struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
	// Default marks the default context of its language other than
	// python's (which is the first): the one a cell of that language
	// with no context runs in. E2B's Context has no such field.
	Default bool `json:"default,omitempty"`
}

// wireContext is E2B's Context as its API answers it.
type wireContext struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
}

func (c codeContext) wire() wireContext {
	return wireContext{ID: c.ID, Language: c.Language, Cwd: c.Cwd}
}

// interpreters holds each sandbox's contexts, the default one first.
type interpreters struct {
	mu        sync.Mutex
	bySandbox map[string][]codeContext
}

// contexts returns sb's contexts, made with its default one on first use.
// Sandboxes that are gone are forgotten then.
func (s *Server) contexts(sb *sandbox) []codeContext {
	list, made := s.contextsOf(sb)
	if made {
		s.persist(sb)
	}
	return list
}

// contextsOf is contexts, and whether it made the default one now.
func (s *Server) contextsOf(sb *sandbox) ([]codeContext, bool) {
	in := &s.interp
	in.mu.Lock()
	defer in.mu.Unlock()
	if list, ok := in.bySandbox[sb.ID]; ok {
		return list, false
	}
	if in.bySandbox == nil {
		in.bySandbox = map[string][]codeContext{}
	}
	for id := range in.bySandbox {
		if _, ok := s.lookup(id); !ok {
			delete(in.bySandbox, id)
		}
	}
	list := []codeContext{{ID: newUUID(), Language: runner.CellPython, Cwd: defaultCwd}}
	if sb.Lang == nodePreset && sb.Image == "" {
		// As E2B's server starts its default javascript context with
		// python's: listed now, its node started at its first cell.
		list = append(list, codeContext{ID: newUUID(), Language: runner.CellJavaScript, Cwd: defaultCwd, Default: true})
	}
	in.bySandbox[sb.ID] = list
	return list, true
}

// defaultContext finds sb's default context of lang, made on first use as
// E2B's server makes its default context of each language; the driver's
// name for it is "" for python's.
func (s *Server) defaultContext(sb *sandbox, lang string) (codeContext, string) {
	list := s.contexts(sb)
	if lang == runner.CellPython {
		return list[0], ""
	}
	find := func(list []codeContext) (codeContext, bool) {
		for _, c := range list {
			if c.Default && c.Language == lang {
				return c, true
			}
		}
		return codeContext{}, false
	}
	if c, ok := find(list); ok {
		return c, c.ID
	}
	var c codeContext
	s.setContexts(sb, func(list []codeContext) []codeContext {
		var ok bool
		if c, ok = find(list); ok {
			return list // another cell made it meanwhile
		}
		c = codeContext{ID: newUUID(), Language: lang, Cwd: defaultCwd, Default: true}
		return append(list, c)
	})
	return c, c.ID
}

// cellDefault is defaultContext for a cell that names no context. A
// javascript or typescript one made now is made in the sandbox first, as
// createContext makes one: a template without node answers 400 saying
// so, and lists no context that cannot run. false: it answered.
func (s *Server) cellDefault(w http.ResponseWriter, r *http.Request, sb *sandbox, lang string) (codeContext, string, bool) {
	had := slices.ContainsFunc(s.contexts(sb), func(c codeContext) bool { return c.Default && c.Language == lang })
	c, driver := s.defaultContext(sb, lang)
	if had || lang != runner.CellJavaScript && lang != runner.CellTypeScript {
		return c, driver, true
	}
	failed, err := s.contextOp(r.Context(), sb, runner.Cell{Op: runner.CellCreate, Context: driver, Language: c.Language, Cwd: c.Cwd})
	if err == nil && failed == nil {
		return c, driver, true
	}
	s.setContexts(sb, func(list []codeContext) []codeContext {
		return slices.DeleteFunc(list, func(x codeContext) bool { return x.ID == c.ID })
	})
	if err != nil {
		writeRunnerError(w, sb, err)
	} else {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("running a %s cell in %s: %s", lang, c.Cwd, failed.Value))
	}
	return c, driver, false
}

// findContext finds one of sb's contexts; the driver's name for it is ""
// for the default one.
func (s *Server) findContext(sb *sandbox, id string) (c codeContext, driver string, ok bool) {
	for i, c := range s.contexts(sb) {
		if c.ID == id {
			if i == 0 {
				return c, "", true
			}
			return c, c.ID, true
		}
	}
	return codeContext{}, "", false
}

// setContexts changes sb's list of contexts.
func (s *Server) setContexts(sb *sandbox, change func([]codeContext) []codeContext) {
	list := s.contexts(sb)
	s.interp.mu.Lock()
	if cur, ok := s.interp.bySandbox[sb.ID]; ok {
		list = cur
	}
	s.interp.bySandbox[sb.ID] = change(append([]codeContext(nil), list...))
	s.interp.mu.Unlock()
	s.persist(sb)
}

// interpreterHandler serves the code interpreter (port 49999): /execute
// and /contexts on the sandbox's python interpreter.
func (s *Server) interpreterHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, "OK") })
	mux.HandleFunc("POST /execute", s.execute)
	mux.HandleFunc("GET /contexts", func(w http.ResponseWriter, r *http.Request) {
		list := s.contexts(sandboxFrom(r.Context()))
		wire := make([]wireContext, len(list))
		for i, c := range list {
			wire[i] = c.wire()
		}
		writeJSON(w, http.StatusOK, wire)
	})
	mux.HandleFunc("POST /contexts", s.createContext)
	mux.HandleFunc("DELETE /contexts/{id}", s.removeContext)
	mux.HandleFunc("POST /contexts/{id}/restart", s.restartContext)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("%s %s: the code interpreter serves POST /execute, GET and POST /contexts, DELETE /contexts/{id} and POST /contexts/{id}/restart", r.Method, r.URL.Path))
	})
	return mux
}

// executeRequest is E2B's ExecutionRequest.
type executeRequest struct {
	Code      *string           `json:"code"`
	ContextID string            `json:"context_id"`
	Language  string            `json:"language"`
	EnvVars   map[string]string `json:"env_vars"`
}

// execute runs a cell and streams its events.
func (s *Server) execute(w http.ResponseWriter, r *http.Request) {
	sb := sandboxFrom(r.Context())
	var req executeRequest
	if !decodeBody(w, r, s.cfg.MaxBody, &req) {
		return
	}
	if req.Code == nil {
		writeError(w, http.StatusBadRequest, "code is required: the code to run")
		return
	}
	if req.ContextID != "" && req.Language != "" {
		writeError(w, http.StatusBadRequest, "context_id and language: give one of them, not both (a context has its language)")
		return
	}
	lang, err := checkLanguage(req.Language)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := checkEnv(req.EnvVars); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var c codeContext
	var driver string
	if req.ContextID != "" {
		var ok bool
		if c, driver, ok = s.findContext(sb, req.ContextID); !ok {
			writeError(w, http.StatusNotFound, fmt.Sprintf("context %s not found in sandbox %s: make one with POST /contexts (createCodeContext)", req.ContextID, sb.ID))
			return
		}
	} else {
		var ok bool
		if c, driver, ok = s.cellDefault(w, r, sb, lang); !ok {
			return
		}
	}
	code := *req.Code
	if c.Language == runner.CellPython {
		code = leadingIndent(code)
	}
	// A cell may run far longer than the listener's write timeout.
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stream := newExecStream(w, cancel)
	stop := make(chan struct{})
	defer close(stop)
	go stream.keepalive(stop)
	call := runner.SessionCall{
		Code:    []byte(code),
		Timeout: s.cellTimeout(),
		Stdout:  output{e: stream, kind: "stdout"},
		Stderr:  output{e: stream, kind: "stderr", tail: 1},
		Cell: &runner.Cell{
			Context:   driver,
			Language:  c.Language,
			Cwd:       c.Cwd,
			GlobalEnv: sb.Env,
			Env:       req.EnvVars,
			Record:    stream.record,
		},
	}
	res, err := s.runner.RunInSession(ctx, sb.ID, sb.Caller, call, s.cfg.Max)
	stream.flush()
	if errors.Is(err, runner.ErrInterrupted) && ctx.Err() != nil {
		return // the client went away: nobody reads what would follow
	}
	if err != nil && !stream.begun() {
		writeRunnerError(w, sb, err)
		return
	}
	if res.SessionEnded != "" || sb.killed.Load() {
		// As E2B's: a cell whose sandbox ended is no result but a cut
		// stream, which runCode rejects.
		panic(http.ErrAbortHandler)
	}
	if err != nil {
		msg := res.Error
		if msg == "" && err != nil {
			msg = err.Error()
		}
		stream.send(map[string]any{"type": "error", "name": "SandboxError", "value": msg, "traceback": ""})
	}
	stream.send(map[string]any{"type": "end_of_execution"})
}

// cellTimeout is a cell's timeout: the operator's maximum, if any.
func (s *Server) cellTimeout() time.Duration {
	if s.cfg.Max.Timeout > 0 {
		return s.cfg.Max.Timeout
	}
	return interpCellTimeout
}

// createRequest is E2B's CreateContext.
type createRequest struct {
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
}

func (s *Server) createContext(w http.ResponseWriter, r *http.Request) {
	sb := sandboxFrom(r.Context())
	var req createRequest
	if !decodeBody(w, r, s.cfg.MaxBody, &req) {
		return
	}
	lang, err := checkLanguage(req.Language)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.Cwd == "" {
		req.Cwd = defaultCwd
	}
	if !strings.HasPrefix(req.Cwd, "/") {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("cwd must be an absolute path in the sandbox, not %q", req.Cwd))
		return
	}
	c := codeContext{ID: newUUID(), Language: lang, Cwd: req.Cwd}
	failed, err := s.contextOp(r.Context(), sb, runner.Cell{Op: runner.CellCreate, Context: c.ID, Language: c.Language, Cwd: c.Cwd})
	if err != nil {
		writeRunnerError(w, sb, err)
		return
	}
	if failed != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("creating a %s context in %s: %s", lang, req.Cwd, failed.Value))
		return
	}
	s.setContexts(sb, func(list []codeContext) []codeContext { return append(list, c) })
	writeJSON(w, http.StatusOK, c.wire())
}

func (s *Server) removeContext(w http.ResponseWriter, r *http.Request) {
	sb := sandboxFrom(r.Context())
	id := r.PathValue("id")
	c, driver, ok := s.findContext(sb, id)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("context %s not found in sandbox %s", id, sb.ID))
		return
	}
	if driver == "" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("context %s is the sandbox's default context, which cannot be removed: restart it to empty it", id))
		return
	}
	if _, err := s.contextOp(r.Context(), sb, runner.Cell{Op: runner.CellDrop, Context: driver, Language: c.Language}); err != nil {
		writeRunnerError(w, sb, err)
		return
	}
	s.setContexts(sb, func(list []codeContext) []codeContext {
		for i, c := range list {
			if c.ID == id {
				return append(list[:i], list[i+1:]...)
			}
		}
		return list
	})
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) restartContext(w http.ResponseWriter, r *http.Request) {
	sb := sandboxFrom(r.Context())
	id := r.PathValue("id")
	c, driver, ok := s.findContext(sb, id)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("context %s not found in sandbox %s", id, sb.ID))
		return
	}
	if _, err := s.contextOp(r.Context(), sb, runner.Cell{Op: runner.CellReset, Context: driver, Language: c.Language, Cwd: c.Cwd}); err != nil {
		writeRunnerError(w, sb, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// contextOp runs a cell operation that runs no code; failed is the error
// record the interpreter answered with, if any.
func (s *Server) contextOp(ctx context.Context, sb *sandbox, cell runner.Cell) (failed *runner.CellRecord, err error) {
	cell.Record = func(rec runner.CellRecord) {
		if rec.Kind == "error" {
			failed = &rec
		}
	}
	var stderr bytes.Buffer
	res, err := s.runner.RunInSession(ctx, sb.ID, sb.Caller, runner.SessionCall{Timeout: interpOpTimeout, Stderr: &stderr, Cell: &cell}, s.cfg.Max)
	if err == nil && res.SessionEnded != "" {
		err = errors.New(res.Error)
	}
	if err == nil && failed == nil && res.ExitCode != 0 {
		err = fmt.Errorf("the sandbox's interpreter failed (exit status %d): %s", res.ExitCode, strings.TrimSpace(stderr.String()))
	}
	return failed, err
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
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if isTooLarge(err) {
			writeError(w, http.StatusRequestEntityTooLarge, tooLarge(limit))
		} else {
			writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		}
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "the request body: "+strings.TrimPrefix(err.Error(), "json: "))
		return false
	}
	return true
}

// writeRunnerError answers a call that did not run.
func writeRunnerError(w http.ResponseWriter, sb *sandbox, err error) {
	var fe *runner.FieldError
	var paused *runner.SessionPausedError
	switch {
	case errors.As(err, &fe):
		writeError(w, http.StatusBadRequest, fe.Error())
	case errors.As(err, &paused):
		writeError(w, http.StatusConflict, fmt.Sprintf("sandbox %s is paused: resume it (Sandbox.connect) first", sb.ID))
	case errors.Is(err, runner.ErrSessionNotFound):
		writeJSON(w, http.StatusBadGateway, map[string]any{"sandboxId": sb.ID, "message": err.Error(), "code": http.StatusBadGateway})
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
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
