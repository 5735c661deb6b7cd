package integration

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The code interpreter (port 49999) through the real @e2b/code-interpreter
// SDK, on the sandbox's python session interpreter.

// interpScript reads integration/e2b/NAME.
func interpScript(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("e2b", name))
	must(t, err)
	return string(b)
}

// TestE2BInterp: state across cells (x = 41, then x + 1 is 42), streamed
// output, a DataFrame's HTML, a matplotlib figure as a PNG of figsize x
// dpi pixels (and one per plt.show()), an exception as an error with its
// name, env vars for the sandbox and for one cell, a `!` shell escape, a timeout that
// interrupts the cell and keeps the state, and another language refused.
// On runc and runsc.
func TestE2BInterp(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			e := startE2B(t, "--runtime", rt)
			out := lines(e.node(t, e.keys[0], interpScript(t, "interp_cells.mjs")))
			want := []string{
				`assign undefined 0 true`,
				`x + 1 42 2 true`,
				`str hi`,
				`bang sh /home/user oops /home/user true`,
				`logs out 1 err stderr err,stdout out 1 7`,
				`dataframe html,data true a {"a":[1,2]}`,
				`plot 1 false PNG 400 240 <Figure size 400x240 with 1 Axes> drawn` + "\n",
				`show 3 2 0`,
				`error ZeroDivisionError division by zero true 0`,
				`syntax SyntaxError`,
				`after errors 41`,
				`env ('from-create', 'cell')`,
				`env after undefined`,
				`timeout TimeoutError true`,
				`after timeout (41, 1) true`,
				`r SandboxError 400 Bad Request`,
			}
			if got := strings.Join(out, "\n"); got != strings.Join(want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s\nserver log:\n%s", got, strings.Join(want, "\n"), e.log)
			}
			e.stop(t)
			assertClean(t)
		})
	}
}

// TestE2BInterpContexts: two contexts and the default one share no state;
// each keeps its working directory; a restart empties one; a removed one
// is gone (404); a context in a directory that is not there is refused.
// On runc and runsc.
func TestE2BInterpContexts(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			e := startE2B(t, "--runtime", rt)
			out := lines(e.node(t, e.keys[0], interpScript(t, "interp_contexts.mjs")))
			want := []string{
				`made python /home/user /tmp true`,
				`one one 2`,
				`two NameError`,
				`default default`,
				`cwd two /tmp`,
				`cwd one /home/user`,
				`list 4 2`,
				`restarted NameError 1`,
				`default kept default`,
				`removed 3 false`,
				`run removed NotFoundError`,
				`bad cwd SandboxError 400 Bad Request`,
			}
			if got := strings.Join(out, "\n"); got != strings.Join(want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s\nserver log:\n%s", got, strings.Join(want, "\n"), e.log)
			}
			e.stop(t)
			assertClean(t)
		})
	}
}

// TestE2BInterpBash: a bash context (createCodeContext({language:
// 'bash'})) keeps variables, functions and its working directory between
// cells; runCode with language 'bash' and no context runs in a default
// bash context of its own, listed as bash; a line comes while the cell
// still sleeps; the sandbox's env vars and a cell's are seen, a cell's
// only in that cell; a failing command is an error whose value is its
// exit status, as Jupyter's bash kernel gives it; lines that look like
// the driver's sentinel do not end a cell; a timeout interrupts the cell
// (the rest of it does not run) and keeps the shell; a restart gives a
// fresh shell in the context's directory; a removed context's shell is
// gone. On runc and runsc.
func TestE2BInterpBash(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			e := startE2B(t, "--runtime", rt)
			out := lines(e.node(t, e.keys[0], interpScript(t, "interp_bash.mjs")))
			want := []string{
				`made bash /home/user`,
				`assign 0 true 1`,
				`kept 42 /tmp | f says hi 2`,
				`default cwd /home/user 1`,
				`default apart unset`,
				`list python,javascript,bash,bash true`,
				`streamed true first second true`,
				`env from-create cell`,
				`env after default`,
				`env overwrite overwrite from-create`,
				`failed "" 2 before true`,
				`false 1`,
				`true true`,
				`sentinel after true true`,
				`timeout TimeoutError true`,
				`after timeout 41 1 true`,
				`restarted unset /home/user | no f 1`,
				`shells 2 2`,
				`removed false 1`,
				`run removed NotFoundError`,
			}
			if got := strings.Join(out, "\n"); got != strings.Join(want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s\nserver log:\n%s", got, strings.Join(want, "\n"), e.log)
			}
			e.stop(t)
			assertClean(t)
		})
	}
}

// TestE2BInterpHTTP: over plain HTTP, what the SDK does not show: the
// body of a refusal names the field.
func TestE2BInterpHTTP(t *testing.T) {
	e := startE2B(t)
	sb := strings.Fields(e.node(t, e.keys[0], `import { Sandbox } from '@e2b/code-interpreter'; const s = await Sandbox.create(); console.log(s.sandboxId, s.envdAccessToken)`))
	for _, tc := range []struct{ body, says string }{
		{`{"code":"1","language":"r"}`, `language \"r\" is not available: boxer's code interpreter runs python, bash, javascript (js) and typescript (ts)`},
		{`{"code":"1","timeout":5}`, `unknown field \"timeout\"`},
	} {
		req, _ := http.NewRequest("POST", e.api+"/execute", strings.NewReader(tc.body))
		req.Header.Set("E2b-Sandbox-Id", sb[0])
		req.Header.Set("X-Access-Token", sb[1])
		req.Header.Set("E2b-Sandbox-Port", "49999")
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(body), tc.says) {
			t.Errorf("%s: %d %s, want 400 saying %s", tc.body, resp.StatusCode, body, tc.says)
		}
	}
	e.stop(t)
	assertClean(t)
}
