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

// sessionNode is session_node.py, which session_cell.py loads for a
// session's first javascript or typescript context, and nodeDriver is
// session_node.js, the program of that context's node.
//
//go:embed session_node.py
var sessionNode string

//go:embed session_node.js
var nodeDriver string

// sessionChart is session_chart.py, which session_cell.py loads for the
// first matplotlib figure a cell shows.
//
//go:embed session_chart.py
var sessionChart string

// cellFile, bashFile, nodeFile, nodeDriverFile and chartFile are where the driver
// finds them, read-only in /code.
const (
	cellFile       = ".boxer-cell.py"
	bashFile       = ".boxer-bash.py"
	nodeFile       = ".boxer-node.py"
	nodeDriverFile = ".boxer-node.js"
	chartFile      = ".boxer-chart.py"
)
