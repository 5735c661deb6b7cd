package imagebuild

import (
	"fmt"
	"path"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// state is the image as far as the build got: its config, the ARGs in
// scope and the user steps run as.
type state struct {
	config ocispec.ImageConfig
	// args are the ARGs declared in the stage, with their values.
	args map[string]string
	// argOrder keeps args' declaration order.
	argOrder []string
	// stepUser is who RUN steps run as: root inside the step's user
	// namespace until a USER line says otherwise (a base image's own
	// user, boxer's nobody, could install nothing).
	stepUser string
	lex      *shell.Lex
}

func newState(cfg ocispec.ImageConfig, escape rune) *state {
	if cfg.Labels == nil {
		cfg.Labels = map[string]string{}
	}
	return &state{config: cfg, args: map[string]string{}, stepUser: "0:0", lex: shell.NewLex(escape)}
}

// argEnv is the ARGs as variables, for expansion and for RUN steps.
func (s *state) argEnv() []string {
	var env []string
	for _, k := range s.argOrder {
		env = append(env, k+"="+s.args[k])
	}
	return env
}

// expandEnv is what a word may use: the ARGs, then the image's ENV
// (which wins, as in Docker).
func (s *state) expandEnv() []string {
	return append(s.argEnv(), s.config.Env...)
}

// expand expands the variables of cmd in place, if it has any.
func (s *state) expand(cmd instructions.Command) error {
	e, ok := cmd.(instructions.SupportsSingleWordExpansion)
	if !ok {
		return nil
	}
	env := shell.EnvsFromSlice(s.expandEnv())
	return e.Expand(func(word string) (string, error) {
		out, _, err := s.lex.ProcessWord(word, env)
		return out, err
	})
}

// declare handles ARG: a build argument's value, else the default.
func (s *state) declare(c *instructions.ArgCommand, buildArgs map[string]string) {
	for _, a := range c.Args {
		v, given := buildArgs[a.Key]
		if !given && a.Value != nil {
			v = *a.Value
		}
		if _, seen := s.args[a.Key]; !seen {
			s.argOrder = append(s.argOrder, a.Key)
		}
		s.args[a.Key] = v
	}
}

// setEnv handles ENV.
func (s *state) setEnv(c *instructions.EnvCommand) {
	for _, kv := range c.Env {
		s.config.Env = setVar(s.config.Env, kv.Key, kv.Value)
	}
}

// setVar replaces or appends key=value in env.
func setVar(env []string, key, value string) []string {
	for i, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == key {
			env[i] = key + "=" + value
			return env
		}
	}
	return append(env, key+"="+value)
}

// workdir resolves a WORKDIR or COPY destination against the current one.
func (s *state) workdir(p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	wd := s.config.WorkingDir
	if wd == "" {
		wd = "/"
	}
	return path.Join(wd, p)
}

// runArgv is the argv of a RUN, CMD or ENTRYPOINT: the shell form
// through /bin/sh -c, the exec form as it is.
func runArgv(c instructions.ShellDependantCmdLine) []string {
	if c.PrependShell {
		return []string{"/bin/sh", "-c", strings.Join(c.CmdLine, " ")}
	}
	return append([]string(nil), c.CmdLine...)
}

// numericUser reads USER as uid[:gid], root or nobody: other names
// would need the image's /etc/passwd, which the host side does not read.
func numericUser(u string) (string, error) {
	switch u {
	case "root":
		return "0:0", nil
	case "nobody":
		return "65534:65534", nil
	}
	uid, gid, err := parseChown(u)
	if err != nil {
		return "", fmt.Errorf("USER %q: numeric UID[:GID] only", u)
	}
	return fmt.Sprintf("%d:%d", uid, gid), nil
}
