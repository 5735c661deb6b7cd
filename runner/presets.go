package runner

import (
	"path"
	"slices"
	"strings"

	"github.com/boxer-dev/boxer/oci"
)

// Preset is a language: the image it runs in, how its interpreter is called
// and the file name its code gets.
type Preset struct {
	Name string
	// Image is the default image reference, built by 'boxer setup'.
	Image string
	// Packages are the Debian packages of the default image.
	Packages []string
	// File is the name of the code file under oci.CodeDir.
	File string
	// Command is the interpreter argv; the code file's path is appended.
	Command []string
	// Env is set before the request's own variables.
	Env []string
	// Support holds files delivered read-only next to the code (name to
	// content), such as a preset's runner script.
	Support map[string]string
	// Example is a first program in the language, printing 1.
	Example string
}

// Args is the argv that runs the preset's code file.
func (p Preset) Args() []string {
	return append(slices.Clone(p.Command), path.Join(oci.CodeDir, p.File))
}

// tsRunner type-strips a TypeScript file with the image's TypeScript
// compiler (Debian's node-typescript) and runs the result in-process: no
// output file, so nothing needs the read-only root to be writable.
// Syntax errors are reported like tsc's and exit 1; types are not checked.
const tsRunner = `'use strict';
const fs = require('fs');
const Module = require('module');
const ts = require('typescript');
const file = process.argv[2];
const out = ts.transpileModule(fs.readFileSync(file, 'utf8'), {
  fileName: file,
  reportDiagnostics: true,
  compilerOptions: {
    module: ts.ModuleKind.CommonJS,
    target: ts.ScriptTarget.ES2020,
    esModuleInterop: true,
    inlineSourceMap: true,
  },
});
const errors = (out.diagnostics || []).filter(d => d.category === ts.DiagnosticCategory.Error);
if (errors.length > 0) {
  for (const d of errors) {
    const msg = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    if (d.file) {
      const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
      console.error(file + '(' + (line + 1) + ',' + (character + 1) + '): error TS' + d.code + ': ' + msg);
    } else {
      console.error('error TS' + d.code + ': ' + msg);
    }
  }
  process.exit(1);
}
const m = new Module(file, null);
m.filename = file;
m.paths = Module._nodeModulePaths('/workspace');
process.argv.splice(1, 1);
m._compile(out.outputText, file);
`

// presets are the languages boxer knows. Unexported: a sandbox's command
// and image come from here, so no importer may change them; Presets and
// LookupPreset hand out copies.
var presets = map[string]Preset{
	"python": {
		Name:  "python",
		Image: "boxer/python",
		// python3 is the interpreter and its whole standard library;
		// tzdata is what the zoneinfo module reads.
		Packages: []string{"python3", "tzdata"},
		File:     "main.py",
		Command:  []string{"python3", "-u"},
		// The root is read-only: no bytecode cache to write.
		Env:     []string{"PYTHONDONTWRITEBYTECODE=1"},
		Example: "print(1)",
	},
	"python-data": {
		Name:     "python-data",
		Image:    "boxer/python-data",
		Packages: []string{"python3", "tzdata", "python3-numpy", "python3-pandas", "python3-matplotlib"},
		File:     "main.py",
		Command:  []string{"python3", "-u"},
		// Matplotlib draws to files (no display) and keeps its font cache
		// in the writable /tmp.
		Env:     []string{"PYTHONDONTWRITEBYTECODE=1", "MPLBACKEND=Agg", "MPLCONFIGDIR=/tmp/matplotlib", "XDG_CACHE_HOME=/tmp/.cache"},
		Example: "import numpy; print(numpy.ones(1, dtype=int)[0])",
	},
	"javascript": {
		Name:     "javascript",
		Image:    "boxer/node",
		Packages: []string{"nodejs", "node-typescript"},
		File:     "main.js",
		Command:  []string{"node"},
		Example:  "console.log(1)",
	},
	"typescript": {
		Name:     "typescript",
		Image:    "boxer/node",
		Packages: []string{"nodejs", "node-typescript"},
		File:     "main.ts",
		Command:  []string{"node", path.Join(oci.CodeDir, ".boxer-ts.js")},
		Support:  map[string]string{".boxer-ts.js": tsRunner},
		Example:  "const n: number = 1; console.log(n)",
	},
	"bash": {
		Name:     "bash",
		Image:    "boxer/bash",
		Packages: []string{"bash", "coreutils", "procps"},
		File:     "main.sh",
		Command:  []string{"bash"},
		Example:  "echo 1",
	},
}

// PresetNames lists the presets, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Presets returns every preset, sorted by name: copies, which the caller
// may change.
func Presets() []Preset {
	var out []Preset
	for _, n := range PresetNames() {
		p, _ := LookupPreset(n)
		out = append(out, p)
	}
	return out
}

// LookupPreset returns a copy of the preset named name, or a *FieldError
// for the lang field that lists the names there are.
func LookupPreset(name string) (Preset, error) {
	p, ok := presets[name]
	if !ok {
		return Preset{}, fieldErr(FieldLang, "names unknown language %q: use one of %s", name, strings.Join(PresetNames(), ", "))
	}
	p.Packages = slices.Clone(p.Packages)
	p.Command = slices.Clone(p.Command)
	p.Env = slices.Clone(p.Env)
	if p.Support != nil {
		support := make(map[string]string, len(p.Support))
		for k, v := range p.Support {
			support[k] = v
		}
		p.Support = support
	}
	return p, nil
}
