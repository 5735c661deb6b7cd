package integration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/internal/docs"
)

// pageTimeout bounds one page's examples, all of them.
const pageTimeout = 3 * time.Minute

// TestDocExamples runs the console blocks of README.md and docs/*.md as a
// reader would type them: per page, every "$ " command in order in one
// bash (-euo pipefail) in an empty directory, with this run's boxer first
// on PATH and its containerd. What a command prints (stdout and stderr, as
// a terminal shows them) must be the output the page shows under it, where
// a line "..." stands for any lines and "..." in a line for any text. What
// a page leaves running in the background (boxer serve &) is stopped with
// SIGTERM once its commands are done.
func TestDocExamples(t *testing.T) {
	pages, err := docs.Pages("..")
	if err != nil {
		t.Fatal(err)
	}
	holdDocPorts(t)
	bin := t.TempDir()
	if err := os.Symlink(boxerBin, filepath.Join(bin, "boxer")); err != nil {
		t.Fatal(err)
	}
	env := append(append([]string{}, testEnv...), "BOXER_NAMESPACE="+namespace, "HOME="+os.Getenv("HOME"))
	for i, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + bin + ":" + p
		}
	}
	for _, page := range pages {
		name, _ := filepath.Rel("..", page)
		var cmds []docs.Command
		blocks, err := docs.Blocks(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			if b.Lang != "console" {
				continue
			}
			c, err := docs.Commands(b)
			if err != nil {
				t.Fatalf("%s:%v", name, err)
			}
			cmds = append(cmds, c...)
		}
		if len(cmds) == 0 {
			continue
		}
		t.Run(name, func(t *testing.T) { runPage(t, name, cmds, env) })
	}
	assertClean(t)
}

// marker ends each command's output in the page's script: a record
// separator, the index of the next command, a record separator.
var marker = regexp.MustCompile("\x1e([0-9]+|end)\x1e\n")

// runPage runs one page's commands in one script and checks each one's
// output.
func runPage(t *testing.T, name string, cmds []docs.Command, env []string) {
	var script strings.Builder
	for i, c := range cmds {
		fmt.Fprintf(&script, "printf '\\036%d\\036\\n'\n%s\n", i, c.Text)
	}
	script.WriteString("printf '\\036end\\036\\n'\n")
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(t.TempDir(), "output"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	ctx, cancel := context.WithTimeout(context.Background(), pageTimeout)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script.String())
	sh.Dir, sh.Env = dir, env
	// One file for both streams, as a terminal shows them in the order
	// they are written; a file, not a pipe, so that a background process
	// holding it does not hold up Wait.
	sh.Stdout, sh.Stderr = out, out
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	sh.Cancel = func() error { return syscall.Kill(-sh.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	runErr := sh.Run()
	if sh.Process != nil {
		stopGroup(t, sh.Process.Pid)
	}
	t.Logf("%s: %d commands in %.1fs", name, len(cmds), time.Since(start).Seconds())
	data, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	outputs, last := splitOutput(string(data))
	for i, c := range cmds {
		if i > last {
			break
		}
		got := outputs[i]
		if i == last {
			// The script stopped in this command.
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				t.Errorf("%s:%d: the page's commands took over %v; stopped in:\n$ %s\noutput:\n%s", name, c.Line, pageTimeout, c.Text, indent(got))
			} else {
				t.Errorf("%s:%d: command failed (%v):\n$ %s\noutput:\n%s", name, c.Line, runErr, c.Text, indent(got))
			}
			return
		}
		if !docs.Matches(c.Output, got) {
			t.Errorf("%s:%d: output differs from the page's:\n$ %s\nthe page shows:\n%s\nit printed:\n%s", name, c.Line, c.Text, indent(c.Output), indent(got))
		}
	}
	if last == len(cmds) && runErr != nil {
		t.Errorf("%s: the script failed after its commands: %v", name, runErr)
	}
}

// splitOutput cuts a script's output at its markers into each command's
// lines. last is the index of the command the script stopped in, or
// len(outputs) if it reached the end.
func splitOutput(s string) (outputs [][]string, last int) {
	locs := marker.FindAllStringSubmatchIndex(s, -1)
	for i, loc := range locs {
		if s[loc[2]:loc[3]] == "end" {
			return outputs, len(outputs)
		}
		end := len(s)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		text := strings.TrimSuffix(s[loc[1]:end], "\n")
		var lines []string
		if text != "" {
			lines = strings.Split(text, "\n")
		}
		outputs = append(outputs, lines)
	}
	return outputs, len(outputs) - 1
}

// stopGroup ends what a page left running in the background: SIGINT and
// SIGTERM to the script's process group (a server ends its sessions and
// removes its sandboxes on them), then SIGKILL to what is left after 30 s.
func stopGroup(t *testing.T, pgid int) {
	t.Helper()
	// SIGINT first: a boxer serve among them ends its sessions (SIGTERM
	// alone would leave them to a next server); then SIGTERM for what
	// ignores SIGINT in the background (the shell).
	if syscall.Kill(-pgid, syscall.SIGINT) != nil {
		return // nothing left
	}
	time.Sleep(100 * time.Millisecond)
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.Now().Add(30 * time.Second)
	for groupAlive(pgid) {
		if time.Now().After(deadline) {
			t.Errorf("process group %d still there 30 s after SIGTERM: killed", pgid)
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// groupAlive reports whether a process of the group runs: one that is a
// zombie has ended, whether or not its new parent has reaped it.
func groupAlive(pgid int) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces.
		i := strings.LastIndexByte(string(data), ')')
		f := strings.Fields(string(data[i+1:]))
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

func indent(lines []string) string {
	if len(lines) == 0 {
		return "    (nothing)"
	}
	return "    " + strings.Join(lines, "\n    ")
}

// holdDocPorts waits until no other test run on this host runs the pages'
// examples, and claims them until the test ends: the pages listen on the
// ports they name (8080, 3000), and a make test beside another once ran
// its examples against the other's server (its own could not bind, and
// its audit log stayed empty).
func holdDocPorts(t *testing.T) { holdHostWide(t, "doc-examples", "the doc examples") }

// holdHostWide waits until no other test run on this host holds name,
// and holds it until the test ends: for what every test run on the host
// shares (ports, a host uid's counters). The claim is an abstract unix
// socket, gone with the process that holds it.
func holdHostWide(t *testing.T, name, what string) {
	t.Helper()
	start := time.Now()
	for {
		claim, err := net.Listen("unix", "@boxer-test-"+name)
		if err == nil {
			t.Cleanup(func() { claim.Close() })
			if d := time.Since(start); d > time.Second {
				t.Logf("waited %s for another test run's %s to end", d.Round(time.Second), what)
			}
			return
		}
		if time.Since(start) > 20*time.Minute {
			t.Fatalf("another test run on this host has held %s for 20 minutes: %v", what, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
