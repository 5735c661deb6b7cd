package session

// The code interpreter's half of the session driver, delivered beside it.

import _ "embed"

// sessionCell is session_cell.py, which the driver loads for a session's
// first cell (contract/session_cell.go).
//
//go:embed session_cell.py
var sessionCell string

// sessionBash is session_bash.py, which session_cell.py loads for a
// session's first bash context.
//
//go:embed session_bash.py
var sessionBash string

// cellFile and bashFile are where the driver finds them, read-only in
// /code.
const (
	cellFile = ".boxer-cell.py"
	bashFile = ".boxer-bash.py"
)
