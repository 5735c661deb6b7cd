package imagebuild

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// Dockerfile is a parsed Dockerfile of the subset boxer builds: one stage.
type Dockerfile struct {
	// Name is the file's name in messages ("Dockerfile").
	Name string
	// MetaArgs are the ARGs before FROM, which FROM may use.
	MetaArgs []instructions.ArgCommand
	// From is the base image as written (expanded at build time), on
	// line FromLine.
	From     string
	FromLine int
	// Steps are the instructions after FROM, in order.
	Steps []Step
	// Escape is the file's escape character.
	Escape rune
}

// Step is one instruction after FROM.
type Step struct {
	Line int
	// Text is the instruction as written, on one line.
	Text string
	// Cmd is BuildKit's typed instruction: *instructions.RunCommand,
	// *CopyCommand, *AddCommand, *EnvCommand, *WorkdirCommand,
	// *UserCommand, *ArgCommand, *CmdCommand, *EntrypointCommand or
	// *LabelCommand.
	Cmd instructions.Command
	// User, if set, is who this RUN alone runs as (root, nobody or
	// UID[:GID]): E2B's runCmd(cmd, {user}); otherwise the USER in force.
	User string
	// KeepLinks: a COPY source that is a symlink is copied as one, as
	// E2B's copy does (its SDK uploads links as links unless told to
	// resolve them), not followed as Docker's COPY does.
	KeepLinks bool
}

// Unsupported is a Dockerfile line boxer refuses to build.
type Unsupported struct {
	File        string
	Line        int
	Instruction string
	Why         string
}

// Error is the one line the CLI prints: FILE:LINE: INSTRUCTION is not supported (why).
func (e *Unsupported) Error() string {
	return fmt.Sprintf("%s:%d: %s is not supported (%s)", e.File, e.Line, e.Instruction, e.Why)
}

// maxDockerfile bounds the file read: a Dockerfile is small.
const maxDockerfile = 1 << 20

// Parse reads a Dockerfile with BuildKit's parser and keeps what boxer
// builds; anything else is an *Unsupported naming its line.
func Parse(name string, r io.Reader) (*Dockerfile, error) {
	res, err := parser.Parse(io.LimitReader(r, maxDockerfile))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	df := &Dockerfile{Name: name, Escape: res.EscapeToken}
	refuse := func(n *parser.Node, why string, args ...any) error {
		return &Unsupported{File: name, Line: n.StartLine, Instruction: strings.ToUpper(n.Value), Why: fmt.Sprintf(why, args...)}
	}
	for _, n := range res.AST.Children {
		if len(n.Heredocs) > 0 {
			return nil, refuse(n, "heredocs are not; write the file with COPY or the lines with RUN")
		}
		v, err := instructions.ParseInstruction(n)
		var unknown *instructions.UnknownInstructionError
		if errors.As(err, &unknown) {
			return nil, refuse(n, "not an instruction boxer builds")
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n.StartLine, err)
		}
		if st, ok := v.(*instructions.Stage); ok {
			if df.From != "" {
				return nil, refuse(n, "one stage only: a second FROM starts another")
			}
			if st.Platform != "" {
				return nil, refuse(n, "--platform is not: images are built for this host's")
			}
			df.From, df.FromLine = st.BaseName, n.StartLine
			continue
		}
		if df.From == "" {
			arg, ok := v.(*instructions.ArgCommand)
			if !ok {
				return nil, &Unsupported{File: name, Line: n.StartLine, Instruction: strings.ToUpper(n.Value), Why: "before FROM: only ARG may come first"}
			}
			df.MetaArgs = append(df.MetaArgs, *arg)
			continue
		}
		cmd, ok := v.(instructions.Command)
		if !ok {
			return nil, refuse(n, "not an instruction boxer builds")
		}
		if why := check(cmd); why != "" {
			return nil, refuse(n, "%s", why)
		}
		df.Steps = append(df.Steps, Step{Line: n.StartLine, Text: oneLine(n.Original), Cmd: cmd})
	}
	if df.From == "" {
		return nil, fmt.Errorf("%s: no FROM: a Dockerfile starts from an image", name)
	}
	return df, nil
}

// FromSteps makes a build of steps given as a list rather than a file
// (E2B's template builds): from is the base image, each step's Line its
// number in messages, and each is checked as Parse checks a line.
func FromSteps(name, from string, steps []Step) (*Dockerfile, error) {
	if from == "" {
		return nil, fmt.Errorf("%s: no base image", name)
	}
	for _, s := range steps {
		if why := check(s.Cmd); why != "" {
			return nil, fmt.Errorf("%s:%d: %s: %s", name, s.Line, s.Text, why)
		}
		if _, isRun := s.Cmd.(*instructions.RunCommand); s.User != "" && !isRun {
			return nil, fmt.Errorf("%s:%d: %s: a user of its own is for a RUN step", name, s.Line, s.Text)
		}
		if s.User != "" {
			if _, err := numericUser(s.User); err != nil {
				return nil, fmt.Errorf("%s:%d: %s: %w", name, s.Line, s.Text, err)
			}
		}
	}
	return &Dockerfile{Name: name, From: from, Steps: steps, Escape: '\\'}, nil
}

// check says why cmd cannot be built, or "".
func check(cmd instructions.Command) string {
	switch c := cmd.(type) {
	case *instructions.RunCommand:
		if len(c.FlagsUsed) > 0 {
			return fmt.Sprintf("RUN --%s is not: a step has no mounts, network or security options of its own", c.FlagsUsed[0])
		}
		if len(c.Files) > 0 {
			return "heredocs are not"
		}
	case *instructions.CopyCommand:
		switch {
		case c.From != "":
			return "--from is not: files come from the build context"
		case c.Chmod != "":
			return "--chmod is not: set modes with RUN chmod"
		case c.Link:
			return "--link is not"
		case c.Parents:
			return "--parents is not"
		case len(c.ExcludePatterns) > 0:
			return "--exclude is not"
		case len(c.SourceContents) > 0:
			return "heredocs are not"
		}
		return checkChown(c.Chown)
	case *instructions.AddCommand:
		switch {
		case c.Chmod != "":
			return "--chmod is not: set modes with RUN chmod"
		case c.Link || c.Checksum != "" || c.KeepGitDir != nil || c.Unpack != nil || len(c.ExcludePatterns) > 0:
			return "ADD's flags but --chown are not"
		case len(c.SourceContents) > 0:
			return "heredocs are not"
		}
		for _, src := range c.SourcePaths {
			if strings.Contains(src, "://") || strings.HasPrefix(src, "git@") {
				return "ADD of a URL is not: files come from the build context"
			}
			if isArchive(src) {
				return "ADD of an archive (which Docker unpacks) is not: COPY it and RUN tar"
			}
		}
		return checkChown(c.Chown)
	case *instructions.EnvCommand, *instructions.WorkdirCommand, *instructions.UserCommand,
		*instructions.ArgCommand, *instructions.CmdCommand, *instructions.EntrypointCommand,
		*instructions.LabelCommand:
	default:
		return "boxer builds FROM, RUN, COPY, ADD, ENV, WORKDIR, USER, ARG, CMD, ENTRYPOINT and LABEL"
	}
	return ""
}

// checkChown accepts numeric --chown only: names would be looked up in
// the image's /etc/passwd, which boxer does not read.
func checkChown(chown string) string {
	if chown == "" {
		return ""
	}
	if _, _, err := parseChown(chown); err != nil {
		return "--chown takes numeric UID[:GID] only"
	}
	return ""
}

// isArchive says whether ADD would unpack src.
func isArchive(src string) bool {
	for _, ext := range []string{".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst"} {
		if strings.HasSuffix(strings.ToLower(src), ext) {
			return true
		}
	}
	return false
}

// oneLine folds an instruction's continuation lines.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
