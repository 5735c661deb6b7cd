// Package quote keeps what an error answer quotes of a request short: a
// name, path or value sent by a caller is echoed as a prefix, never whole,
// so that a hostile request of megabytes is not answered with itself.
package quote

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits of what an answer quotes.
const (
	// MaxWord is the most bytes of one word (a run without spaces: a
	// path, a name, a value) an answer keeps.
	MaxWord = 96
	// MaxMessage is the most bytes of a whole message.
	MaxMessage = 1024
)

// Cut is s as an answer may quote it: whole if short, else its first
// MaxWord bytes (whole characters), an ellipsis and its length.
func Cut(s string) string {
	if len(s) <= MaxWord {
		return s
	}
	return prefix(s, MaxWord) + fmt.Sprintf("…(%d bytes)", len(s))
}

// Message is msg with each word longer than MaxWord cut as Cut does, and
// the whole at most about MaxMessage bytes: what a request put into an
// error (its path, a name, a value), however long, comes back as a prefix.
func Message(msg string) string {
	if len(msg) <= MaxWord {
		return msg
	}
	var b strings.Builder
	for i := 0; i < len(msg); {
		j := i
		for j < len(msg) && msg[j] != ' ' {
			j++
		}
		b.WriteString(Cut(msg[i:j]))
		if j < len(msg) {
			b.WriteByte(' ')
			j++
		}
		i = j
		if b.Len() > MaxMessage {
			return prefix(b.String(), MaxMessage) + fmt.Sprintf("…(%d bytes)", len(msg))
		}
	}
	return b.String()
}

// prefix is s's first n bytes at most, ending on a whole character.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
