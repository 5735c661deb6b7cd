package secrets

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind is where a secret's value comes from.
type Kind int

const (
	// FromEnv takes the value from boxer's own environment variable of the
	// secret's name.
	FromEnv Kind = iota
	// FromFile reads the value from a file, byte for byte.
	FromFile
	// FromCmd runs a command (without a shell) and takes what it prints,
	// without its trailing line ends.
	FromCmd
)

// String returns the kind as the --secret flag spells it.
func (k Kind) String() string {
	switch k {
	case FromEnv:
		return "env"
	case FromFile:
		return "file"
	case FromCmd:
		return "cmd"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Source says where a secret's value comes from: Path for FromFile, Argv
// for FromCmd.
type Source struct {
	Kind Kind
	Path string
	Argv []string
}

// Spec is one --secret flag: which secret, from where, and how the run
// receives it.
type Spec struct {
	Name   string
	Source Source
	// Env: also give the program an environment variable NAME (the ",env"
	// suffix).
	Env bool
	// Text is the flag as given (for messages; it never holds a value).
	Text string
	// Timeout bounds a FromCmd source; zero means CmdTimeout.
	Timeout time.Duration
}

// String returns the flag as given.
func (s Spec) String() string { return s.Text }

// specForms says what --secret accepts, for messages.
const specForms = "give NAME, NAME=file:PATH or NAME=cmd:COMMAND ARGS (a value is never given on the command line)"

// envSuffix asks for the secret as an environment variable too.
const envSuffix = ",env"

// ParseSpec parses a --secret flag: NAME (from boxer's environment
// variable NAME), NAME=file:PATH or NAME=cmd:COMMAND ARGS, each optionally
// followed by ",env", which always belongs to the flag, not to a path or a
// command (quote it in a command: cmd:echo 'a,env'). The command is split
// into words without a shell (see splitArgs). An error never repeats what follows '=' unless it is a valid
// file: or cmd: source, since a user may have pasted a value there.
func ParseSpec(text string) (Spec, error) {
	s := Spec{Text: text}
	rest, env := strings.CutSuffix(text, envSuffix)
	s.Env = env
	name, src, hasSrc := strings.Cut(rest, "=")
	if name == "" {
		if hasSrc {
			return Spec{}, fmt.Errorf("--secret =…: %s", specForms)
		}
		return Spec{}, fmt.Errorf("--secret %q: %s", text, specForms)
	}
	if err := CheckName(name); err != nil {
		return Spec{}, err
	}
	s.Name = name
	if !hasSrc {
		return s, nil
	}
	var err error
	if s.Source, err = parseSource(src); err != nil {
		return Spec{}, fmt.Errorf("--secret %s: %w", text, err)
	}
	if s.Source.Kind == FromEnv {
		return Spec{}, fmt.Errorf("--secret %s=…: %s", name, specForms)
	}
	return s, nil
}

// parseSource parses what follows NAME= in a --secret flag. A Source of
// Kind FromEnv with a nil error means src is neither file: nor cmd:, and the
// caller refuses it without repeating it.
func parseSource(src string) (Source, error) {
	if path, ok := strings.CutPrefix(src, "file:"); ok {
		if path == "" {
			return Source{}, errors.New("give the file's path after file:")
		}
		return Source{Kind: FromFile, Path: path}, nil
	}
	if line, ok := strings.CutPrefix(src, "cmd:"); ok {
		argv, err := splitArgs(line)
		if err != nil {
			return Source{}, err
		}
		if len(argv) == 0 {
			return Source{}, errors.New("give a command after cmd:, as in cmd:pass show api-key")
		}
		return Source{Kind: FromCmd, Argv: argv}, nil
	}
	return Source{Kind: FromEnv}, nil
}

// splitArgs splits a command line into words without a shell: blanks
// separate words, single quotes group literally, double quotes group with
// backslash escapes, and outside single quotes a backslash takes the next
// character literally. Nothing is expanded ($VAR, ~, globs stay as written).
func splitArgs(line string) ([]string, error) {
	var (
		args   []string
		word   strings.Builder
		inWord bool // a word has begun, even if empty so far ('')
		quote  byte // the open quote, or 0
	)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				word.WriteByte(c)
			}
		case c == '\\':
			if i+1 == len(line) {
				return nil, errors.New("nothing follows the last backslash: quote it as '\\' or '\\\\'")
			}
			i++
			word.WriteByte(line[i])
			inWord = true
		case quote == '"':
			if c == '"' {
				quote = 0
			} else {
				word.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case isBlank(c):
			if inWord {
				args = append(args, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote: close it", quote)
	}
	if inWord {
		args = append(args, word.String())
	}
	return args, nil
}

// isBlank reports whether c separates the words of a command line.
func isBlank(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\v', '\f':
		return true
	}
	return false
}
