package runner

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxLines is the most lines a runner file may hold: a file holds one
// part of a life, and one that grows past this is split along that life
// (STYLE.md, "A room per concern").
const maxLines = 500

// TestFileSizes fails on a file of runner or its packages over maxLines
// lines, and on a session file that does not open with the one line
// saying which part of a session's life it holds.
func TestFileSizes(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatalf("listing files: %v", err)
	}
	below, err := filepath.Glob("*/*.go")
	if err != nil {
		t.Fatalf("listing files: %v", err)
	}
	files = append(files, below...)
	if len(files) == 0 {
		t.Fatal("no Go files found: the test runs in the runner directory")
	}
	for _, f := range files {
		lines, err := readLines(f)
		if err != nil {
			t.Fatalf("reading %s: %v", f, err)
		}
		if len(lines) > maxLines {
			t.Errorf("%s has %d lines, more than %d: split it along the life it holds", f, len(lines), maxLines)
		}
		if strings.HasPrefix(filepath.Base(f), "session") {
			if why := openingComment(lines); why != "" {
				t.Errorf("%s: %s", f, why)
			}
		}
	}
}

// openingComment says what is wrong with a file's opening ("" if
// nothing): after its build constraints and package clause, one comment
// line, then a blank line.
func openingComment(lines []string) string {
	i := 0
	for i < len(lines) && (strings.HasPrefix(lines[i], "//go:build") || strings.TrimSpace(lines[i]) == "") {
		i++
	}
	if i == len(lines) || !strings.HasPrefix(lines[i], "package ") {
		return "no package clause where expected"
	}
	i++
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	switch {
	case i == len(lines) || !strings.HasPrefix(lines[i], "// "):
		return "does not open with a one-line comment after its package clause saying which part of a session's life it holds"
	case i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "":
		return "its opening comment is more than one line, or is not followed by a blank line"
	}
	return ""
}

func readLines(name string) ([]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}
