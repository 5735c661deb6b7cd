package contract

import (
	"path"
	"slices"
	"strings"

	"github.com/boxer-dev/boxer/oci"
)

// PackagesDir is an empty directory in every image boxer builds. A run with
// network egress gets a tmpfs there, owned by the sandbox user, and the
// preset's NetEnv points its package manager at it: the root stays
// read-only, and the packages a run installs die with it.
const PackagesDir = "/opt/boxer/site-packages"

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
	// NetEnv is set when the run has network egress, after Env: it makes
	// the package manager install into PackagesDir (or the workspace) and
	// the language find what it installed, in the same run.
	NetEnv []string
	// Support holds files delivered read-only next to the code (name to
	// content), such as a preset's runner script.
	Support map[string]string
	// Example is a first program in the language, printing 1.
	Example string
	// Preload names the modules a pre-created sandbox of this preset (a
	// warm one, a standby, a ready session) imports before its program is
	// known, so that a program importing them finds them loaded. The
	// program still runs in a fresh __main__, and the sandbox serves one
	// caller only. The operator may change the list (serve's and run's
	// --preload); empty for presets whose interpreter cannot be preloaded.
	Preload []string
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

// pythonNetEnv makes 'pip install' work as the sandbox user on a read-only
// root, and the packages importable by the interpreter that ran it.
// PIP_TARGET rather than a user or prefix install: the target is PackagesDir
// itself, which PYTHONPATH names and which exists (the tmpfs) when the
// interpreter starts. A sys.path entry that is missing at start is cached
// as having no finder and never looked at again; one that exists is
// rescanned whenever its mtime changes, so 'import x' after pip installed x
// from a subprocess finds it without importlib.invalidate_caches().
// A target install ignores what the image already has, so dependencies the
// image holds (numpy in python-data) are installed again into the target.
var pythonNetEnv = []string{
	"PYTHONPATH=" + PackagesDir,
	"PIP_TARGET=" + PackagesDir,
	// Debian marks its Python as externally managed (PEP 668): a target
	// install skips the check, 'pip uninstall' does not.
	"PIP_BREAK_SYSTEM_PACKAGES=1",
	"PIP_NO_CACHE_DIR=1",
	"PIP_DISABLE_PIP_VERSION_CHECK=1",
	"PIP_ROOT_USER_ACTION=ignore",
}

// nodeNetEnv makes npm install into the workspace (its working directory)
// with its cache in /tmp, and node find what it installed: a module
// required from /code/main.js is looked up in /code/node_modules and
// /node_modules, never /workspace/node_modules, without NODE_PATH.
// NODE_PATH serves require() only; import statements ignore it.
var nodeNetEnv = []string{
	"NODE_PATH=" + path.Join(oci.Workspace, "node_modules"),
	"npm_config_cache=/tmp/.npm",
	"npm_config_update_notifier=false",
	"npm_config_fund=false",
	"npm_config_audit=false",
}

// nodePackages are the node image's, which javascript and typescript share:
// Debian's npm serves runs with egress. npm's dependencies name virtual
// packages, which debootstrap does not resolve (it installs no provider and
// the configure step fails), so their bookworm providers follow npm:
// node-cli-table3, node-has, node-postcss-selector-parser,
// node-color-support, node-cssesc, node-for-each,
// node-jridgewell-source-map, node-types-eslint, node-import-local,
// node-type-fest, node-babel-types and node-babel-helper-module-imports,
// node-path-key, node-types-json-schema and node-queue-microtask, in order.
// With them npm adds 374 packages and 156 MB to the image (bookworm, 2026).
var nodePackages = []string{
	"nodejs", "node-typescript", "npm", "ca-certificates",
	"node-cli-table", "node-function-bind", "node-css-loader",
	"node-fancy-log", "node-css-selector-tokenizer", "node-tape",
	"node-ampproject-remapping", "eslint", "node-jest-debbundle",
	"node-read-pkg", "node-babel7", "node-npm-run-path", "node-json-schema",
	"node-n3",
}

// presets are the languages boxer knows. Unexported: a sandbox's command
// and image come from here, so no importer may change them; Presets and
// LookupPreset hand out copies.
var presets = map[string]Preset{
	"python": {
		Name:  "python",
		Image: "boxer/python",
		// python3 is the interpreter and its whole standard library;
		// tzdata is what the zoneinfo module reads; pip and the CA
		// certificates it verifies HTTPS with serve runs with egress; git
		// is what a coding agent works with (E2B's base template, which
		// this preset is, has it: the SDK's sandbox.git runs it), and so
		// are curl and `python` (python-is-python3), which E2B's template
		// has and its users' commands call.
		Packages: []string{"python3", "tzdata", "python3-pip", "ca-certificates", "git", "curl", "python-is-python3"},
		File:     "main.py",
		Command:  []string{"python3", "-u"},
		// The root is read-only: no bytecode cache to write.
		Env:     []string{"PYTHONDONTWRITEBYTECODE=1"},
		NetEnv:  pythonNetEnv,
		Example: "print(1)",
	},
	"python-data": {
		Name:  "python-data",
		Image: "boxer/python-data",
		// nodejs and node-typescript run the code interpreter's
		// javascript and typescript contexts (docs/e2b.md).
		Packages: []string{"python3", "tzdata", "python3-pip", "ca-certificates", "git", "curl", "python-is-python3", "python3-numpy", "python3-pandas", "python3-matplotlib", "nodejs", "node-typescript"},
		File:     "main.py",
		Command:  []string{"python3", "-u"},
		// Matplotlib draws to files (no display) and keeps its font cache
		// in the writable /tmp.
		Env:     []string{"PYTHONDONTWRITEBYTECODE=1", "MPLBACKEND=Agg", "MPLCONFIGDIR=/tmp/matplotlib", "XDG_CACHE_HOME=/tmp/.cache"},
		NetEnv:  pythonNetEnv,
		Example: "import numpy; print(numpy.ones(1, dtype=int)[0])",
		// A data agent's first lines: about a second of imports in every
		// fresh sandbox (issue 29).
		Preload: []string{"numpy", "pandas", "matplotlib", "matplotlib.pyplot"},
	},
	"javascript": {
		Name:     "javascript",
		Image:    "boxer/node",
		Packages: nodePackages,
		File:     "main.js",
		Command:  []string{"node"},
		NetEnv:   nodeNetEnv,
		Example:  "console.log(1)",
	},
	"typescript": {
		Name:     "typescript",
		Image:    "boxer/node",
		Packages: nodePackages,
		File:     "main.ts",
		Command:  []string{"node", path.Join(oci.CodeDir, ".boxer-ts.js")},
		Support:  map[string]string{".boxer-ts.js": tsRunner},
		NetEnv:   nodeNetEnv,
		Example:  "const n: number = 1; console.log(n)",
	},
	"bash": {
		Name:  "bash",
		Image: "boxer/bash",
		// curl and the CA certificates it verifies HTTPS with serve runs
		// with egress; it reads HTTPS_PROXY itself.
		Packages: []string{"bash", "coreutils", "procps", "curl", "ca-certificates"},
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
		return Preset{}, FieldErr(FieldLang, "names unknown language %q: use one of %s", name, strings.Join(PresetNames(), ", "))
	}
	p.Packages = slices.Clone(p.Packages)
	p.Command = slices.Clone(p.Command)
	p.Env = slices.Clone(p.Env)
	p.NetEnv = slices.Clone(p.NetEnv)
	p.Preload = slices.Clone(p.Preload)
	if p.Support != nil {
		support := make(map[string]string, len(p.Support))
		for k, v := range p.Support {
			support[k] = v
		}
		p.Support = support
	}
	return p, nil
}
