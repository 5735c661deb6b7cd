package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/runner"
)

func TestPresetsHelloWorld(t *testing.T) {
	tests := []struct {
		lang, code, want string
	}{
		{"python", `print("hello from python")`, "hello from python\n"},
		{"javascript", `console.log("hello from " + "javascript")`, "hello from javascript\n"},
		{"typescript", "const who: string = 'typescript';\nconsole.log(`hello from ${who}`);", "hello from typescript\n"},
		{"bash", `echo "hello from bash"`, "hello from bash\n"},
		{"python-data", `import numpy, pandas, matplotlib; print("hello from python-data")`, "hello from python-data\n"},
	}
	for _, tc := range tests {
		t.Run(tc.lang, func(t *testing.T) {
			res, _ := runJSON(t, "--lang", tc.lang, "-c", tc.code)
			if res.Status != "exited" || res.ExitCode != 0 || res.Stdout != tc.want {
				t.Errorf("status %s exit %d stdout %q stderr %q", res.Status, res.ExitCode, res.Stdout, res.Stderr)
			}
		})
	}
	assertClean(t)
}

// TestPresetExamples runs each preset's own first example, the one 'boxer
// setup' suggests when that language is the first it set up: it prints 1.
func TestPresetExamples(t *testing.T) {
	for _, p := range runner.Presets() {
		t.Run(p.Name, func(t *testing.T) {
			res, _ := runJSON(t, "--lang", p.Name, "-c", p.Example)
			if res.Status != "exited" || res.ExitCode != 0 || res.Stdout != "1\n" {
				t.Errorf("example %q: status %s exit %d stdout %q stderr %q", p.Example, res.Status, res.ExitCode, res.Stdout, res.Stderr)
			}
		})
	}
	assertClean(t)
}

func TestTypeScriptWithTypes(t *testing.T) {
	code := `
interface Point { x: number; y: number }
type Shape = { kind: "circle"; r: number } | { kind: "square"; side: number };
enum Color { Red = "red", Blue = "blue" }
function area(s: Shape): number {
  switch (s.kind) {
    case "circle": return Math.PI * s.r ** 2;
    case "square": return s.side ** 2;
  }
}
class Box<T> {
  constructor(private readonly items: T[] = []) {}
  add(item: T): this { this.items.push(item); return this; }
  get size(): number { return this.items.length; }
}
const p: Point = { x: 1, y: 2 };
const b = new Box<Point>().add(p).add({ x: 3, y: 4 });
console.log(area({ kind: "square", side: 3 }), b.size, Color.Blue, JSON.stringify(p));
`
	res, _ := runJSON(t, "--lang", "typescript", "-c", code)
	if res.Stdout != "9 2 blue {\"x\":1,\"y\":2}\n" {
		t.Errorf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	// A syntax error is reported like tsc's, with the position, and exit 1.
	res, _ = runJSON(t, "--lang", "typescript", "-c", "const x: number = ;\n")
	if res.ExitCode != 1 || !strings.Contains(res.Stderr, "main.ts(1,19): error TS1109") {
		t.Errorf("syntax error: exit %d stderr %q", res.ExitCode, res.Stderr)
	}
	assertClean(t)
}

func TestPythonDataPlotCopiedOut(t *testing.T) {
	out := t.TempDir()
	res, _ := runJSON(t, "--lang", "python-data", "--copy-out", out, "--memory", "512m", "--timeout", "60s", "-c", `
import numpy as np, pandas as pd, matplotlib.pyplot as plt
df = pd.DataFrame({"x": np.arange(10), "y": np.arange(10) ** 2})
df.plot(x="x", y="y")
plt.savefig("plot.png")
print(df["y"].sum())
`)
	if res.Status != "exited" || res.Stdout != "285\n" {
		t.Fatalf("status %s stdout %q stderr %q", res.Status, res.Stdout, res.Stderr)
	}
	data, err := os.ReadFile(filepath.Join(out, "plot.png"))
	if err != nil || !strings.HasPrefix(string(data), "\x89PNG") {
		t.Fatalf("plot.png: %v", err)
	}
	if len(res.FilesOut) != 1 || res.FilesOut[0].Path != "plot.png" || res.FilesOut[0].Size != int64(len(data)) {
		t.Errorf("files_out %+v, want plot.png of %d bytes", res.FilesOut, len(data))
	}
	assertClean(t)
}
