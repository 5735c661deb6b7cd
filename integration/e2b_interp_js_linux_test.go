package integration

import (
	"strings"
	"testing"
)

// The code interpreter's javascript and typescript contexts, and its chart
// and data results, through the real @e2b/code-interpreter SDK.

// TestE2BInterpJS: a javascript context (createCodeContext({language:
// 'js'})) keeps its variables and functions between cells and answers its
// last expression's value as text; console.log and console.error are
// stdout and stderr; a thrown error is an ExecutionError with the error's
// name, message and stack; top-level await and import statements work and
// the imports are kept; runCode with language 'js' and no context runs in
// a default context of its own, with the sandbox's env vars and a cell's
// (for that cell only); a TypeScript cell with an interface and typed
// variables runs (types stripped), its state kept for the next ts cell; a
// busy loop is interrupted at the cell's timeout and the context keeps
// what ran before it; a restart empties the context; a template without
// node (E2B's base, boxer's python) refuses a javascript context with a
// 400 saying so, and a javascript cell with no context the same way,
// listing no context that cannot run. On runc and runsc.
func TestE2BInterpJS(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			e := startE2B(t, "--runtime", rt)
			out := lines(e.node(t, e.keys[0], interpScript(t, "interp_js.mjs")))
			want := []string{
				`made javascript /home/user`,
				`assign 0 true 1`,
				`kept 42 2 true`,
				`function 82`,
				`object { a: 1, s: 'hi' }`,
				`logs ["out 1\n"] ["err\n"] done`,
				`error TypeError bad 41 TypeError: bad 41 true`,
				`syntax SyntaxError`,
				`await awaited 41`,
				`import function a/b`,
				`import kept function /home/user`,
				`default 7 1`,
				`default apart undefined`,
				`env [ 'from-create', 'cell' ]`,
				`env after default`,
				`ts typed 6`,
				`ts kept 3`,
				`ts syntax SyntaxError`,
				`timeout TimeoutError true`,
				`after timeout [ 41, 1 ] true`,
				`restarted undefined 1`,
				`no node SandboxError 400 Bad Request`,
				`no node body 400 creating a typescript context in /home/user: node is not installed in this sandbox: its template has no node`,
				`no node cell SandboxError`,
				`no node listed python`,
			}
			if got := strings.Join(out, "\n"); got != strings.Join(want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s\nserver log:\n%s", got, strings.Join(want, "\n"), e.log)
			}
			e.stop(t)
			assertClean(t)
		})
	}
}

// TestE2BInterpCharts: matplotlib figures a cell shows come with E2B's
// chart beside their PNG: a bar chart (its title, axis labels, the unit
// in "[k]", each bar's label, group and value), a line chart (each line's
// label, "Line 1" for one without, and points, the unit in "(s)"), a
// scatter, a pie (each wedge's angle) and a box plot (each box's
// quartiles, whiskers and outliers), a figure of two Axes as a superchart of both; a
// DataFrame as the last expression comes with its data, column by
// column, a timestamp in ISO 8601 and NaN as null; a number has neither;
// a PIL image shown, saved and as the last expression is a PNG each.
func TestE2BInterpCharts(t *testing.T) {
	e := startE2B(t)
	out := lines(e.node(t, e.keys[0], interpScript(t, "interp_charts.mjs")))
	want := []string{
		`bar bar Sales Authors Books [k] null k [{"label":"A","group":"Sold","value":10},{"label":"B","group":"Sold","value":20},{"label":"C","group":"Sold","value":30}] true`,
		`line line Lines x (s) s y square:[[0,0],[1,1],[2,4]] Line 1:[[0,0],[1,2],[2,4]] linear true`,
		`scatter scatter Scatter [{"label":"pts","points":[[1,3],[2,4]]}]`,
		`pie pie Pie [{"label":"one","angle":90,"radius":1},{"label":"three","angle":270,"radius":1}]`,
		`box box_and_whisker Box [{"label":"A","min":78,"first_quartile":85,"median":88,"third_quartile":90,"max":92,"outliers":[]},{"label":"B","min":84,"first_quartile":84.75,"median":88,"third_quartile":90.5,"max":95,"outliers":[76]}]`,
		`superchart superchart Both line,bar`,
		`data {"a":[1,2,3],"b":["x",null,"z"],"f":[0.5,null,2],"t":["2024-01-01T00:00:00","2024-01-02T00:00:00","2024-01-03T00:00:00"]} html,data`,
		`no data true true`,
		`pil PNG,PNG,PNG done`,
	}
	if got := strings.Join(out, "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s\nserver log:\n%s", got, strings.Join(want, "\n"), e.log)
	}
	e.stop(t)
	assertClean(t)
}
