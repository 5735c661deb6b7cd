package server

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/boxer-dev/boxer/audit"
	"github.com/boxer-dev/boxer/runner"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RunCodeInput is the input of the MCP run_code tool: the HTTP request's
// fields for a language's code, under the same names.
type RunCodeInput struct {
	Lang string `json:"lang,omitempty" jsonschema:"language preset (see list_languages); not with session_id"`
	// SessionID runs the code in a session (create_session) instead of a
	// fresh sandbox: the session's language, limits and state.
	SessionID string `json:"session_id,omitempty" jsonschema:"run in this session (from create_session) instead of a fresh sandbox: its language, state and files; then only code, stdin, files, files_base64, return_files, timeout and output_limit apply"`
	Input
}

// runCodeSchema is RunCodeInput's schema, with the languages and runtimes
// the runner accepts listed from the runner itself.
func runCodeSchema() (*jsonschema.Schema, error) {
	s, err := jsonschema.For[RunCodeInput](nil)
	if err != nil {
		return nil, err
	}
	for name, values := range map[string][]string{"lang": runner.PresetNames(), "runtime": runner.Runtimes()} {
		for _, v := range values {
			s.Properties[name].Enum = append(s.Properties[name].Enum, v)
		}
	}
	return s, nil
}

// request is the runner request run_code runs for in, normalized within
// max: a *runner.FieldError names the argument at fault.
func (in RunCodeInput) request(max runner.Maxima) (runner.Request, error) {
	if in.Lang == "" {
		return runner.Request{}, &runner.FieldError{Field: runner.FieldLang, Message: "is required: one of " + strings.Join(runner.PresetNames(), ", ") + " (or session_id)"}
	}
	return RunRequest{Lang: in.Lang, Input: in.Input}.Request(max)
}

// Language is one entry of list_languages.
type Language struct {
	Name  string `json:"name"`
	Image string `json:"image"`
	File  string `json:"file" jsonschema:"the name the code gets in /code"`
	// Example is a first program in the language.
	Example string `json:"example" jsonschema:"a first program in the language, printing 1"`
}

// LanguagesOutput is the output of list_languages.
type LanguagesOutput struct {
	Languages []Language `json:"languages"`
}

// NewMCP returns an MCP server offering run_code and list_languages on r,
// with requests capped by max and at most concurrency runs at once; log
// (may be nil) gets a line per run and per session event.
func NewMCP(r *runner.Runner, max runner.Maxima, smax runner.SessionMaxima, concurrency int, version string, log *audit.Log) (*mcp.Server, error) {
	s := mcp.NewServer(&mcp.Implementation{Name: "boxer", Version: version}, nil)
	slots := make(chan struct{}, max1(concurrency))
	schema, err := runCodeSchema()
	if err != nil {
		return nil, fmt.Errorf("building run_code's schema: %w", err)
	}
	mcp.AddTool(s, &mcp.Tool{
		Name:        "run_code",
		InputSchema: schema,
		Description: "Run code in a fresh, hardened, network-less Linux sandbox and return its output, " +
			"exit code, status (exited, timeout, oom, killed, error) and resource use. " +
			"The working directory /workspace is writable; files put there with 'files' are readable by the code.",
	}, func(ctx context.Context, call *mcp.CallToolRequest, in RunCodeInput) (*mcp.CallToolResult, runner.Result, error) {
		var req runner.Request
		var err error
		if in.SessionID == "" {
			if req, err = in.request(max); err != nil {
				return nil, runner.Result{}, err
			}
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil, runner.Result{}, ctx.Err()
		}
		defer func() { <-slots }()
		// With a progress token, the output comes as it is written too.
		p := newProgress(ctx, call)
		var res runner.Result
		if in.SessionID != "" {
			res, err = runInSession(ctx, r, max, in, p)
		} else {
			if p != nil {
				req.Stdout, req.Stderr = p.writer(stdout), p.writer(stderr)
			}
			res, err = r.Run(ctx, req)
		}
		if p != nil {
			p.finish()
		}
		log.Write(mcpRunEntry(in, req.Lang, res, err))
		if res.SessionEnded != "" {
			e := mcpEntry(audit.EventEnded, in.SessionID, nil)
			e.Reason, e.Network = res.SessionEnded, r.EndedNetwork(in.SessionID)
			log.Write(e)
		}
		if err != nil {
			return nil, runner.Result{}, err
		}
		content := append([]mcp.Content{&mcp.TextContent{Text: summary(res)}}, fileContents(res.Files)...)
		// The files travel once, as content blocks the model can see: the
		// structured result lists them without their bytes.
		res.Files = withoutContent(res.Files)
		return &mcp.CallToolResult{Content: content}, res, nil
	})
	addSessionTools(s, r, max, smax, log)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "list_languages",
		Description: "List the languages run_code accepts, with the image each runs in.",
	}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, LanguagesOutput, error) {
		var out LanguagesOutput
		for _, p := range runner.Presets() {
			out.Languages = append(out.Languages, Language{Name: p.Name, Image: p.Image, File: p.File, Example: p.Example})
		}
		return nil, out, nil
	})
	return s, nil
}

// summary is the readable text an MCP host shows for a result.
func summary(res runner.Result) string {
	var b strings.Builder
	switch res.Status {
	case runner.StatusExited:
		fmt.Fprintf(&b, "exited with code %d", res.ExitCode)
	case runner.StatusTimeout:
		b.WriteString("timed out: the sandbox was killed")
	case runner.StatusOOM:
		b.WriteString("ran out of memory: the sandbox was killed")
	case runner.StatusKilled:
		fmt.Fprintf(&b, "killed by %s", res.Signal)
	default:
		fmt.Fprintf(&b, "error: %s", res.Error)
	}
	fmt.Fprintf(&b, " in %.0f ms (cpu %.0f ms, peak memory %d KiB)\n", res.DurationMs, res.CPUTimeMs, res.MemoryPeakBytes>>10)
	if res.SessionEnded != "" {
		fmt.Fprintf(&b, "the session ended: %s\n", runner.EndText(res.SessionEnded))
	}
	for _, s := range []struct {
		name, text string
		cut        bool
	}{{"stdout", res.Stdout, res.StdoutTruncated}, {"stderr", res.Stderr, res.StderrTruncated}} {
		if s.text == "" {
			continue
		}
		fmt.Fprintf(&b, "--- %s", s.name)
		if s.cut {
			b.WriteString(" (truncated)")
		}
		fmt.Fprintf(&b, " ---\n%s", s.text)
		if !strings.HasSuffix(s.text, "\n") {
			b.WriteString("\n")
		}
	}
	for _, f := range res.FilesOut {
		fmt.Fprintf(&b, "file out: %s (%d bytes)\n", f.Path, f.Size)
	}
	for _, f := range res.Files {
		fmt.Fprintf(&b, "file: %s (%d bytes, %s", f.Path, f.Size, f.MediaType)
		if f.Truncated {
			b.WriteString(", over the size cap: not returned")
		}
		b.WriteString(")\n")
	}
	return b.String()
}

// imageTypes are the media types MCP hosts show a model as images.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/svg+xml": true, "image/gif": true, "image/webp": true}

// fileContents turns returned files into MCP content: images as image
// blocks, text as embedded text resources, the rest as blobs. A truncated
// file has no content and only the summary names it.
func fileContents(files []runner.ReturnedFile) []mcp.Content {
	var out []mcp.Content
	for _, f := range files {
		if f.Truncated {
			continue
		}
		mediaType, _, _ := strings.Cut(f.MediaType, ";")
		uri := "file:///workspace/" + f.Path
		switch {
		case imageTypes[mediaType]:
			out = append(out, &mcp.ImageContent{Data: f.Content, MIMEType: mediaType})
		case isText(mediaType) && utf8.Valid(f.Content):
			out = append(out, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: uri, MIMEType: f.MediaType, Text: string(f.Content)}})
		default:
			out = append(out, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: uri, MIMEType: f.MediaType, Blob: f.Content}})
		}
	}
	return out
}

// isText reports whether a media type is text a model reads as such.
func isText(mediaType string) bool {
	return strings.HasPrefix(mediaType, "text/") || mediaType == "application/json" || strings.HasSuffix(mediaType, "+json") ||
		mediaType == "application/xml" || strings.HasSuffix(mediaType, "+xml")
}

// withoutContent lists files without their bytes.
func withoutContent(files []runner.ReturnedFile) []runner.ReturnedFile {
	out := make([]runner.ReturnedFile, len(files))
	for i, f := range files {
		f.Content = nil
		out[i] = f
	}
	if files == nil {
		return nil
	}
	return out
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}
