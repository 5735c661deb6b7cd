package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/boxer-dev/boxer/runner"
	"github.com/urfave/cli/v2"
)

// sessionFilesVerbs are what 'boxer session files ID VERB' does, with the
// words it takes.
var sessionFilesVerbs = map[string]struct {
	args      string
	min, max  int
	usage     string
	entryJSON bool
}{
	"ls":    {"DIR", 1, 1, "list a directory (--depth levels)", true},
	"stat":  {"PATH", 1, 1, "describe a file, directory or symlink (not followed)", true},
	"cat":   {"FILE", 1, 1, "print a file", false},
	"write": {"FILE", 1, 1, "write stdin to a file, making the directories it lacks", true},
	"mkdir": {"DIR...", 1, -1, "make directories with the parents they lack", true},
	"mv":    {"FROM TO", 2, 2, "rename, from any of the roots to any other", true},
	"rm":    {"PATH...", 1, -1, "remove files and directories with what they hold", false},
	"watch": {"DIR", 1, 1, "print changes in a directory (--recursive: and under it) until interrupted", false},
}

func sessionFilesCommand() *cli.Command {
	return &cli.Command{
		Name:      "files",
		Usage:     "read, write, list, move, remove and watch files in a session's /workspace, /tmp and /home/user",
		ArgsUsage: "ID ls|stat|cat|write|mkdir|mv|rm|watch PATH...",
		Description: `Paths are absolute in the sandbox, under /workspace, /tmp or /home/user (its
HOME), which share the session's --tmp-size. A symlink is followed only inside
the root it is in, never out of it; ls and stat describe symlinks, not what they
point to.

  boxer session files $S ls /tmp
  echo hello | boxer session files $S write /home/user/notes.txt
  boxer session files $S cat /home/user/notes.txt
  boxer session files $S mv /tmp/out.csv /workspace/out.csv
  boxer session files $S watch --recursive /workspace`,
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print entries (ls, stat, write, mkdir, mv) and events (watch) as JSON"},
			&cli.IntFlag{Name: "depth", Value: 1, Usage: "ls: levels of directories to list"},
			&cli.BoolFlag{Name: "recursive", Aliases: []string{"r"}, Usage: "watch: the directories under DIR too"},
		},
		Action: sessionFilesAction,
	}
}

func sessionFilesAction(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) < 2 {
		return fail("session files needs ID, a verb (ls, stat, cat, write, mkdir, mv, rm, watch) and a path (see 'boxer session files --help')")
	}
	id, verb, paths := args[0], args[1], args[2:]
	v, ok := sessionFilesVerbs[verb]
	if !ok {
		return fail("session files: unknown verb %q: ls, stat, cat, write, mkdir, mv, rm or watch", verb)
	}
	if len(paths) < v.min || v.max >= 0 && len(paths) > v.max {
		return fail("session files %s needs %s", verb, v.args)
	}
	r, err := connect(c, os.Stderr, true)
	if err != nil {
		return err
	}
	defer r.Close()
	ctx, jsonOut := c.Context, c.Bool("json")
	var entries []runner.FileEntry
	switch verb {
	case "ls":
		entries, err = r.ListSessionDir(ctx, id, "", paths[0], c.Int("depth"))
		if err == nil && !jsonOut {
			return printEntries(entries)
		}
	case "stat":
		var e runner.FileEntry
		e, err = r.StatSessionPath(ctx, id, "", paths[0])
		entries = []runner.FileEntry{e}
	case "cat":
		var data []byte
		// The file is read whole: it is at most the session's size.
		if data, err = r.ReadSessionPath(ctx, id, "", paths[0], 1<<50); err == nil {
			_, err = os.Stdout.Write(data)
		}
	case "write":
		var e runner.FileEntry
		e, err = r.WriteSessionPath(ctx, id, "", paths[0], os.Stdin)
		entries = []runner.FileEntry{e}
	case "mkdir":
		for _, p := range paths {
			var e runner.FileEntry
			if e, _, err = r.MakeSessionDir(ctx, id, "", p); err != nil {
				break
			}
			entries = append(entries, e)
		}
	case "mv":
		var e runner.FileEntry
		e, err = r.MoveSessionPath(ctx, id, "", paths[0], paths[1])
		entries = []runner.FileEntry{e}
	case "rm":
		for _, p := range paths {
			if err = r.RemoveSessionPath(ctx, id, "", p); err != nil {
				break
			}
		}
	case "watch":
		return watchSessionDir(c, r, id, paths[0], jsonOut)
	}
	if err != nil {
		return sessionFilesError(id, err)
	}
	if jsonOut && v.entryJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetEscapeHTML(false)
		if verb == "ls" || verb == "mkdir" {
			return enc.Encode(entries)
		}
		return enc.Encode(entries[0])
	}
	if verb == "stat" {
		return printEntries(entries)
	}
	return nil
}

// printEntries writes entries as a table: type, mode, owner, size, time,
// path (and a symlink's target).
func printEntries(entries []runner.FileEntry) error {
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	for _, e := range entries {
		p := e.Path
		if e.SymlinkTarget != "" {
			p += " -> " + e.SymlinkTarget
		}
		fmt.Fprintf(w, "%s\t%d:%d\t%d\t%s\t%s\n", e.Permissions, e.UID, e.GID, e.Size, e.ModifiedAt.Local().Format("2006-01-02 15:04:05"), p)
	}
	return w.Flush()
}

// watchSessionDir prints a watch's events, a line each, until boxer is
// interrupted (exit 0) or the watch ends otherwise (the session ended,
// the directory went: exit 125).
func watchSessionDir(c *cli.Context, r *runner.Runner, id, p string, jsonOut bool) error {
	w, err := r.WatchSessionDir(c.Context, id, "", p, c.Bool("recursive"))
	if err != nil {
		return sessionFilesError(id, err)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	for e := range w.Events {
		if jsonOut {
			err = enc.Encode(e)
		} else {
			_, err = fmt.Printf("%s %s\n", e.Type, e.Path)
		}
		if err != nil {
			return nil // stdout closed: nobody reads any more
		}
	}
	if err := w.Err(); err != nil {
		return sessionFilesError(id, err)
	}
	return nil
}

// sessionFilesError says what went wrong with a session's file in the
// CLI's words.
func sessionFilesError(id string, err error) error {
	var fe *runner.FieldError
	switch {
	case errors.Is(err, runner.ErrSessionNotFound):
		return fail("%v", sessionError(id, err))
	case errors.Is(err, runner.ErrFileNotFound):
		p, _, _ := strings.Cut(err.Error(), ": ")
		return fail("%s: no such file or directory in session %s (or a symlink out of its root)", p, id)
	case errors.As(err, &fe):
		return fail("%s", fe.Render(func(field string) string {
			switch field {
			case runner.FieldPath, "from", "to":
				return strings.ToUpper(field)
			}
			return "--" + field
		}))
	}
	return requestError(err)
}
