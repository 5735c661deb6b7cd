package interp

// A sandbox's code contexts: made, found, listed, restarted and removed.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/boxer-dev/boxer/runner"
)

// CodeContext is E2B's Context, as kept in the sandbox's record.
type CodeContext struct {
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

func (c CodeContext) wire() wireContext {
	return wireContext{ID: c.ID, Language: c.Language, Cwd: c.Cwd}
}

// Contexts is a copy of sandbox id's contexts, the default one first:
// what its record keeps.
func (s *Server) Contexts(id string) []CodeContext {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.bySandbox[id])
}

// Adopt gives sandbox id the contexts of its record or its source's (a
// fork's); with none, it gets its default one on first use.
func (s *Server) Adopt(id string, contexts []CodeContext) {
	if len(contexts) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bySandbox == nil {
		s.bySandbox = map[string][]CodeContext{}
	}
	s.bySandbox[id] = contexts
}

// contexts returns sb's contexts, made with its default one on first use.
// Sandboxes that are gone are forgotten then.
func (s *Server) contexts(sb Sandbox) []CodeContext {
	list, made := s.contextsOf(sb)
	if made {
		sb.Persist()
	}
	return list
}

// contextsOf is contexts, and whether it made the default one now.
func (s *Server) contextsOf(sb Sandbox) ([]CodeContext, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if list, ok := s.bySandbox[sb.ID]; ok {
		return list, false
	}
	if s.bySandbox == nil {
		s.bySandbox = map[string][]CodeContext{}
	}
	for id := range s.bySandbox {
		if !s.host.Held(id) {
			delete(s.bySandbox, id)
		}
	}
	list := []CodeContext{{ID: newUUID(), Language: runner.CellPython, Cwd: defaultCwd}}
	if sb.Lang == nodePreset && sb.Image == "" {
		// As E2B's server starts its default javascript context with
		// python's: listed now, its node started at its first cell.
		list = append(list, CodeContext{ID: newUUID(), Language: runner.CellJavaScript, Cwd: defaultCwd, Default: true})
	}
	s.bySandbox[sb.ID] = list
	return list, true
}

// defaultContext finds sb's default context of lang, made on first use as
// E2B's server makes its default context of each language; the driver's
// name for it is "" for python's.
func (s *Server) defaultContext(sb Sandbox, lang string) (CodeContext, string) {
	list := s.contexts(sb)
	if lang == runner.CellPython {
		return list[0], ""
	}
	find := func(list []CodeContext) (CodeContext, bool) {
		for _, c := range list {
			if c.Default && c.Language == lang {
				return c, true
			}
		}
		return CodeContext{}, false
	}
	if c, ok := find(list); ok {
		return c, c.ID
	}
	var c CodeContext
	s.setContexts(sb, func(list []CodeContext) []CodeContext {
		var ok bool
		if c, ok = find(list); ok {
			return list // another cell made it meanwhile
		}
		c = CodeContext{ID: newUUID(), Language: lang, Cwd: defaultCwd, Default: true}
		return append(list, c)
	})
	return c, c.ID
}

// cellDefault is defaultContext for a cell that names no context. A
// javascript or typescript one made now is made in the sandbox first, as
// createContext makes one: a template without node answers 400 saying
// so, and lists no context that cannot run. false: it answered.
func (s *Server) cellDefault(w http.ResponseWriter, r *http.Request, sb Sandbox, lang string) (CodeContext, string, bool) {
	had := slices.ContainsFunc(s.contexts(sb), func(c CodeContext) bool { return c.Default && c.Language == lang })
	c, driver := s.defaultContext(sb, lang)
	if had || lang != runner.CellJavaScript && lang != runner.CellTypeScript {
		return c, driver, true
	}
	failed, err := s.contextOp(r.Context(), sb, runner.Cell{Op: runner.CellCreate, Context: driver, Language: c.Language, Cwd: c.Cwd})
	if err == nil && failed == nil {
		return c, driver, true
	}
	s.setContexts(sb, func(list []CodeContext) []CodeContext {
		return slices.DeleteFunc(list, func(x CodeContext) bool { return x.ID == c.ID })
	})
	if err != nil {
		s.writeRunnerError(w, sb, err)
	} else {
		s.host.WriteError(w, http.StatusBadRequest, fmt.Sprintf("running a %s cell in %s: %s", lang, c.Cwd, failed.Value))
	}
	return c, driver, false
}

// findContext finds one of sb's contexts; the driver's name for it is ""
// for the default one.
func (s *Server) findContext(sb Sandbox, id string) (c CodeContext, driver string, ok bool) {
	for i, c := range s.contexts(sb) {
		if c.ID == id {
			if i == 0 {
				return c, "", true
			}
			return c, c.ID, true
		}
	}
	return CodeContext{}, "", false
}

// setContexts changes sb's list of contexts.
func (s *Server) setContexts(sb Sandbox, change func([]CodeContext) []CodeContext) {
	list := s.contexts(sb)
	s.mu.Lock()
	if cur, ok := s.bySandbox[sb.ID]; ok {
		list = cur
	}
	s.bySandbox[sb.ID] = change(append([]CodeContext(nil), list...))
	s.mu.Unlock()
	sb.Persist()
}

// createRequest is E2B's CreateContext.
type createRequest struct {
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
}

func (s *Server) createContext(w http.ResponseWriter, r *http.Request) {
	sb := s.host.Sandbox(r.Context())
	var req createRequest
	if !s.decodeBody(w, r, &req) {
		return
	}
	lang, err := checkLanguage(req.Language)
	if err != nil {
		s.host.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.Cwd == "" {
		req.Cwd = defaultCwd
	}
	if !strings.HasPrefix(req.Cwd, "/") {
		s.host.WriteError(w, http.StatusBadRequest, fmt.Sprintf("cwd must be an absolute path in the sandbox, not %q", req.Cwd))
		return
	}
	c := CodeContext{ID: newUUID(), Language: lang, Cwd: req.Cwd}
	failed, err := s.contextOp(r.Context(), sb, runner.Cell{Op: runner.CellCreate, Context: c.ID, Language: c.Language, Cwd: c.Cwd})
	if err != nil {
		s.writeRunnerError(w, sb, err)
		return
	}
	if failed != nil {
		s.host.WriteError(w, http.StatusBadRequest, fmt.Sprintf("creating a %s context in %s: %s", lang, req.Cwd, failed.Value))
		return
	}
	s.setContexts(sb, func(list []CodeContext) []CodeContext { return append(list, c) })
	s.host.WriteJSON(w, http.StatusOK, c.wire())
}

// pathContext finds context id of sb, the request's path names; a
// missing one is answered 404.
func (s *Server) pathContext(w http.ResponseWriter, sb Sandbox, id string) (CodeContext, string, bool) {
	c, driver, ok := s.findContext(sb, id)
	if !ok {
		s.host.WriteError(w, http.StatusNotFound, fmt.Sprintf("context %s not found in sandbox %s", id, sb.ID))
	}
	return c, driver, ok
}

func (s *Server) removeContext(w http.ResponseWriter, r *http.Request) {
	sb, id := s.host.Sandbox(r.Context()), r.PathValue("id")
	c, driver, ok := s.pathContext(w, sb, id)
	if !ok {
		return
	}
	if driver == "" {
		s.host.WriteError(w, http.StatusBadRequest, fmt.Sprintf("context %s is the sandbox's default context, which cannot be removed: restart it to empty it", id))
		return
	}
	if _, err := s.contextOp(r.Context(), sb, runner.Cell{Op: runner.CellDrop, Context: driver, Language: c.Language}); err != nil {
		s.writeRunnerError(w, sb, err)
		return
	}
	s.setContexts(sb, func(list []CodeContext) []CodeContext {
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
	sb, id := s.host.Sandbox(r.Context()), r.PathValue("id")
	c, driver, ok := s.pathContext(w, sb, id)
	if !ok {
		return
	}
	if _, err := s.contextOp(r.Context(), sb, runner.Cell{Op: runner.CellReset, Context: driver, Language: c.Language, Cwd: c.Cwd}); err != nil {
		s.writeRunnerError(w, sb, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// contextOp runs a cell operation that runs no code; failed is the error
// record the interpreter answered with, if any.
func (s *Server) contextOp(ctx context.Context, sb Sandbox, cell runner.Cell) (failed *runner.CellRecord, err error) {
	cell.Record = func(rec runner.CellRecord) {
		if rec.Kind == "error" {
			failed = &rec
		}
	}
	var stderr bytes.Buffer
	res, err := s.cfg.Runner.RunInSession(ctx, sb.ID, sb.Caller, runner.SessionCall{Timeout: opTimeout, Stderr: &stderr, Cell: &cell}, s.cfg.Max)
	if err == nil && res.SessionEnded != "" {
		err = errors.New(res.Error)
	}
	if err == nil && failed == nil && res.ExitCode != 0 {
		err = fmt.Errorf("the sandbox's interpreter failed (exit status %d): %s", res.ExitCode, strings.TrimSpace(stderr.String()))
	}
	return failed, err
}
