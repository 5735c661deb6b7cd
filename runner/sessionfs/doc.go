// Package sessionfs owns a session's files as the host reaches them: the
// roots the sandbox may write (/workspace, /tmp, /home/user, directories
// of one tmpfs in the session's run directory), a sandbox path parsed and
// found inside its root only, whatever the sandbox planted or swapped on
// the way, and the operations on them (read, write, stat, list, mkdir,
// move, remove, watch), with ids told as the sandbox sees them.
//
// It knows a session by its run directory alone: finding a session, its
// owner and whether it is paused are package session's, which calls this
// one. It builds on the contract and package sandbox (its openers of
// planted files), and must never import package session, keeper, warm or
// runner. docs/internals.md ("Packages of runner") draws the layers.
package sessionfs
