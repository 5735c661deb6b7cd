package contract

// A code interpreter's cells: calls in a context, with typed records.

// A cell runs in a context of the session's interpreter and reports typed
// records beside its output.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// The languages of a Cell's context.
const (
	// CellPython is a namespace of the session's python interpreter.
	CellPython = "python"
	// CellBash is a bash of its own, started by the interpreter at the
	// context's first cell, as Jupyter's bash kernel is one.
	CellBash = "bash"
	// CellJavaScript is a node of its own, started by the interpreter at
	// the context's first cell, as E2B's javascript kernel is one.
	CellJavaScript = "javascript"
	// CellTypeScript is a CellJavaScript context whose cells are
	// TypeScript, transpiled (types stripped, not checked) before they
	// run.
	CellTypeScript = "typescript"
)

// The operations of a Cell.
const (
	// CellExec runs Code in the context (made on first use).
	CellExec = "exec"
	// CellCreate makes the context anew, in the directory Cwd, which must
	// exist in the sandbox.
	CellCreate = "create"
	// CellReset empties the context's namespace and sets its count to 0.
	CellReset = "reset"
	// CellDrop forgets the context.
	CellDrop = "drop"
)

// Cell makes a session call a code interpreter's cell (what E2B's code
// interpreter runs): the call's Code runs in one of the interpreter's
// contexts, each a namespace, a working directory and an execution count
// of its own, as a notebook kernel runs a cell, and the cell's results
// and error come to Record as typed records. Its output still goes to the
// call's Stdout and Stderr. Only python and python-data sessions have
// cells; plain calls share the namespace of the context "". A context of
// CellBash runs its cells' code in a bash of its own: its state is the
// shell's (variables, functions, working directory), a cell's records
// are its count and, when its exit status is not 0, an error whose Value
// is that status. A context of CellJavaScript or CellTypeScript runs its
// cells in a node of its own: its state is node's global scope, a cell's
// records its count, its last expression's value (util.inspect's text)
// and its error (the thrown value's name, message and stack).
type Cell struct {
	// Op is one of CellExec (the default), CellCreate, CellReset and
	// CellDrop.
	Op string
	// Context names the context: "" is the session's own namespace.
	Context string
	// Language is the context's: CellPython (the default), CellBash,
	// CellJavaScript or CellTypeScript, which a context named "" cannot
	// be.
	Language string
	// Cwd is the context's working directory when it is made; each cell
	// starts where the context's last one ended.
	Cwd string
	// GlobalEnv is set in the interpreter's environment for good before
	// the cell; Env for the cell only.
	GlobalEnv, Env map[string]string
	// Record receives the cell's records, in order: the count first, its
	// results and its error after its output.
	Record func(CellRecord)
}

// CellRecord is one record of a cell.
type CellRecord struct {
	// Kind is "count", "result" or "error".
	Kind string `json:"kind"`
	// Count is the context's execution count, this cell's included.
	Count int `json:"count,omitempty"`
	// Main tells the value of the cell's last expression from what it
	// displayed (an open matplotlib figure, display()).
	Main bool `json:"main,omitempty"`
	// Data holds a result's formats by MIME type: text/plain always (the
	// value's repr), text/html, image/png (base64) and the others the
	// value has a _repr_*_ method for; application/json is JSON, every
	// other a JSON string.
	Data map[string]json.RawMessage `json:"data,omitempty"`
	// Name, Value and Traceback describe the cell's exception: its type's
	// name, its message and the formatted traceback.
	Name      string `json:"name,omitempty"`
	Value     string `json:"value,omitempty"`
	Traceback string `json:"traceback,omitempty"`
}

// cellMaxRecord bounds one record (a plot's PNG in base64, a DataFrame's
// HTML); a larger one is dropped, and the cell's stderr says so.
const cellMaxRecord = 32 << 20

// cellSpec is the file a cell's frame names in /code (session_cell.py
// reads it).
type cellSpec struct {
	Op        string            `json:"op"`
	Context   string            `json:"context"`
	Language  string            `json:"language,omitempty"`
	Cwd       string            `json:"cwd,omitempty"`
	Code      string            `json:"code,omitempty"`
	GlobalEnv map[string]string `json:"global_env,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
}

// Check refuses a cell the interpreter could not run; interpreter tells
// a session of lang that has one.
func (c *Cell) Check(lang string, interpreter bool) error {
	if !interpreter {
		return FieldErr(FieldLang, "%q has no interpreter that keeps state: cells need a python or python-data session", lang)
	}
	switch c.Op {
	case "", CellExec, CellCreate, CellReset, CellDrop:
	default:
		return fmt.Errorf("unknown cell operation %q", c.Op)
	}
	switch c.Language {
	case "", CellPython:
	case CellBash, CellJavaScript, CellTypeScript:
		if c.Context == "" {
			return FieldErr("context", "must name a %s context: the context \"\" is the session's own python namespace", c.Language)
		}
	default:
		return FieldErr("language", "must be python, bash, javascript or typescript, not %q", c.Language)
	}
	for _, env := range []map[string]string{c.GlobalEnv, c.Env} {
		for k, v := range env {
			if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
				return FieldErr(FieldEnv, "%q: a variable's name is not empty and holds no '=' or NUL, its value no NUL", k)
			}
		}
	}
	if c.Op == CellCreate && !strings.HasPrefix(c.Cwd, "/") {
		return FieldErr("cwd", "must be an absolute path in the sandbox, not %q", c.Cwd)
	}
	return nil
}

// Spec is what the driver reads for the cell with code.
func (c *Cell) Spec(code []byte) ([]byte, error) {
	op := c.Op
	if op == "" {
		op = CellExec
	}
	return json.Marshal(cellSpec{Op: op, Context: c.Context, Language: c.Language, Cwd: c.Cwd, Code: string(code), GlobalEnv: c.GlobalEnv, Env: c.Env})
}

// CellRecords splits a cell's "rec" frames into records: JSON lines, a
// record split across frames where it is longer than one.
type CellRecords struct {
	// Cell is the cell whose records these are.
	Cell *Cell
	line []byte
	// n counts the record's bytes; over tells one being dropped (over
	// cellMaxRecord) until its end.
	n    int
	over bool
	// Warn says what was dropped, on the cell's stderr.
	Warn func(string)
}

// Write takes one frame's data.
func (r *CellRecords) Write(data []byte) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		part := data
		if i >= 0 {
			part = data[:i]
		}
		if !r.over {
			if len(r.line)+len(part) > cellMaxRecord {
				r.over, r.line = true, nil
			} else {
				r.line = append(r.line, part...)
			}
		}
		r.n += len(part)
		if i < 0 {
			return
		}
		data = data[i+1:]
		r.end()
	}
}

// end ends the record under way.
func (r *CellRecords) end() {
	defer func() { r.line, r.over, r.n = nil, false, 0 }()
	if r.over {
		r.Warn(fmt.Sprintf("boxer: a result of %d bytes was dropped: it is over %d MiB\n", r.n, cellMaxRecord>>20))
		return
	}
	var rec CellRecord
	if err := json.Unmarshal(r.line, &rec); err != nil {
		r.Warn(fmt.Sprintf("boxer: a record of the interpreter's is not JSON: %v\n", err))
		return
	}
	if r.Cell.Record != nil {
		r.Cell.Record(rec)
	}
}
