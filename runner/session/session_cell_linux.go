package session

// The code interpreter's half of the session driver, delivered beside it.

import _ "embed"

// sessionCell is session_cell.py, which the driver loads for a session's
// first cell (contract/session_cell.go).
//
//go:embed session_cell.py
var sessionCell string

// cellFile is where the driver finds it, read-only in /code.
const cellFile = ".boxer-cell.py"
