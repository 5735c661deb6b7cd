package templates

// A template's steps (E2B's TemplateBuildStartV2) as the image builder's:
// RUN, COPY, ENV, WORKDIR and USER, checked before the build starts, each
// refusal naming its field.

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"

	"github.com/boxer-dev/boxer/imagebuild"
)

// BuildStart is the body of POST /v2/templates/{id}/builds/{buildID}.
type BuildStart struct {
	FromImage         string          `json:"fromImage"`
	FromTemplate      string          `json:"fromTemplate"`
	FromImageRegistry json.RawMessage `json:"fromImageRegistry"`
	Force             bool            `json:"force"`
	Steps             []BuildStep     `json:"steps"`
	StartCmd          string          `json:"startCmd"`
	ReadyCmd          string          `json:"readyCmd"`
}

// BuildStep is E2B's TemplateStep, with what the SDKs send beside it.
type BuildStep struct {
	Type            string   `json:"type"`
	Args            []string `json:"args"`
	FilesHash       string   `json:"filesHash"`
	Force           bool     `json:"force"`
	ForceUpload     *bool    `json:"forceUpload"`
	ResolveSymlinks *bool    `json:"resolveSymlinks"`
	Gzip            *bool    `json:"gzip"`
}

// E2BBaseImage is the SDKs' default base image (Template() without a
// from...): boxer's "base" template stands for it.
const E2BBaseImage = "e2bdev/base"

// filesHash is the form of a copy's files hash (SHA-256, hex).
var filesHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

// plan is a template's build as the image builder takes it.
type plan struct {
	df *imagebuild.Dockerfile
	// hashes are the copy steps' files hashes, in order.
	hashes []string
	// workdir is the last WORKDIR, where the start command runs.
	workdir string
}

// planBuild checks body and makes its plan; base resolves fromTemplate
// (a preset, E2B's name for one, or a template of the caller's) to an
// image.
func planBuild(body BuildStart, base func(string) (string, bool)) (*plan, error) {
	if len(body.FromImageRegistry) > 0 && string(body.FromImageRegistry) != "null" {
		return nil, unsupported("fromImageRegistry", "boxer pulls base images without credentials (or has them: 'boxer image list')")
	}
	from := body.FromImage
	switch {
	case body.FromImage != "" && body.FromTemplate != "":
		return nil, fieldErr("fromTemplate", "give fromImage or fromTemplate, not both")
	case body.FromTemplate != "":
		img, ok := base(body.FromTemplate)
		if !ok {
			return nil, fieldErr("fromTemplate", fmt.Sprintf("no template %q of this key's: boxer's templates are base, code-interpreter-v1, its presets and this key's own", body.FromTemplate))
		}
		from = img
	case body.FromImage == E2BBaseImage:
		from, _ = base("base")
	case from == "":
		return nil, fieldErr("fromImage", "a template starts from an image or a template")
	}
	p := &plan{workdir: "/"}
	var steps []imagebuild.Step
	for i, st := range body.Steps {
		field := fmt.Sprintf("steps[%d]", i)
		s := imagebuild.Step{Line: i + 1}
		arg := func(n int) string {
			if n < len(st.Args) {
				return st.Args[n]
			}
			return ""
		}
		switch st.Type {
		case "RUN":
			if arg(0) == "" || len(st.Args) > 2 {
				return nil, fieldErr(field+".args", "RUN takes the command and, optionally, the user")
			}
			s.Text = "RUN " + arg(0)
			s.Cmd = &instructions.RunCommand{ShellDependantCmdLine: instructions.ShellDependantCmdLine{CmdLine: []string{arg(0)}, PrependShell: true}}
			s.User = arg(1)
		case "COPY":
			if arg(0) == "" || arg(1) == "" || len(st.Args) > 4 {
				return nil, fieldErr(field+".args", "COPY takes the source, the destination, a user and a mode")
			}
			if arg(3) != "" {
				return nil, unsupported(field+".args", "copy's mode: set it with runCmd('chmod ...')")
			}
			if !filesHash.MatchString(st.FilesHash) {
				return nil, fieldErr(field+".filesHash", "a copy names its uploaded files by their SHA-256 (hex)")
			}
			chown := arg(2)
			if chown == "root" {
				chown = "0:0"
			}
			s.Text = "COPY " + arg(0) + " " + arg(1)
			s.Cmd = &instructions.CopyCommand{SourcesAndDest: instructions.SourcesAndDest{SourcePaths: []string{arg(0)}, DestPath: arg(1)}, Chown: chown}
			// The upload holds links as the SDK found them (or resolved,
			// with resolveSymlinks): a source that is one stays one.
			s.KeepLinks = true
			p.hashes = append(p.hashes, st.FilesHash)
		case "ENV":
			if len(st.Args) == 0 || len(st.Args)%2 != 0 {
				return nil, fieldErr(field+".args", "ENV takes names and values, in pairs")
			}
			var kvs instructions.KeyValuePairs
			var text []string
			for j := 0; j < len(st.Args); j += 2 {
				kvs = append(kvs, instructions.KeyValuePair{Key: st.Args[j], Value: st.Args[j+1]})
				text = append(text, st.Args[j]+"="+st.Args[j+1])
			}
			s.Text = "ENV " + strings.Join(text, " ")
			s.Cmd = &instructions.EnvCommand{Env: kvs}
		case "WORKDIR":
			if arg(0) == "" || len(st.Args) > 1 {
				return nil, fieldErr(field+".args", "WORKDIR takes one directory")
			}
			s.Text = "WORKDIR " + arg(0)
			s.Cmd = &instructions.WorkdirCommand{Path: arg(0)}
			p.workdir = path.Join(p.workdir, arg(0))
			if path.IsAbs(arg(0)) {
				p.workdir = path.Clean(arg(0))
			}
		case "USER":
			if arg(0) == "" || len(st.Args) > 1 {
				return nil, fieldErr(field+".args", "USER takes one user")
			}
			s.Text = "USER " + arg(0)
			s.Cmd = &instructions.UserCommand{User: arg(0)}
		default:
			return nil, fieldErr(field+".type", fmt.Sprintf("%q: boxer builds RUN, COPY, ENV, WORKDIR and USER steps", st.Type))
		}
		steps = append(steps, s)
	}
	df, err := imagebuild.FromSteps("step", from, steps)
	if err != nil {
		return nil, fieldErr("steps", err.Error())
	}
	p.df = df
	return p, nil
}

// fieldErr is a 400 naming E2B's field.
func fieldErr(field, msg string) *Error { return &Error{400, field + ": " + msg} }

// unsupported is a 400 naming a field boxer does not take, and why.
func unsupported(field, why string) *Error {
	return fieldErr(field, "is not supported by boxer: "+why)
}
