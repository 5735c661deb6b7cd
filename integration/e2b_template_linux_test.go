package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/internal/fakenet"
)

// E2B's template builds through the real e2b SDK: Template.build against
// boxer's E2B API, each step a boxer build step, then Sandbox.create of the
// alias.

// e2bFailingBuild builds a template whose second step fails and prints
// what the SDK says.
const e2bFailingBuild = `
import { Template } from 'e2b'
const logs = []
const t = Template().fromTemplate('base')
	.setEnvs({ MARK: process.env.TOK })
	.runCmd('echo out-$MARK; echo err-$MARK >&2; exit 3')
try {
	await Template.build(t, 'broken-' + process.env.TOK, { onBuildLogs: (e) => logs.push(e.message) })
	console.log('built')
} catch (e) {
	console.log('error', e.name)
	console.log(e.message)
}
console.log('logs', JSON.stringify(logs))
`

// e2bTemplateBuild builds a template with a pip install from the fake
// internet's index, a copied file, variables and a start command with a
// ready check, then runs a sandbox of it.
const e2bTemplateBuild = `
import { Template, Sandbox } from 'e2b'
const tok = process.env.TOK
const logs = []
const t = Template({ fileContextPath: process.env.CTX })
	.fromTemplate('base')
	.copy('ca.pem', '/etc/boxer-test-ca.pem')
	.copy('site/hello.txt', '/srv/')
	.copy('site/*', '/links/')
	.setEnvs(Object.fromEntries(process.env.TRUST.split(' ').map((kv) => kv.split('='))))
	.setEnvs({ GREETING: 'hello-' + tok, PIP_INDEX_URL: 'https://` + fakenet.PyPIName + `/simple', PIP_BREAK_SYSTEM_PACKAGES: '1', PIP_NO_CACHE_DIR: '1' })
	.pipInstall('` + fakenet.PyPIPackage + `')
	.setWorkdir('/srv')
	.setStartCmd('python3 -m http.server 8000', 'python3 -c "import socket; socket.create_connection((\'127.0.0.1\', 8000), 1)"')
const info = await Template.build(t, 'tmpl-' + tok, { onBuildLogs: (e) => logs.push(e.message) })
console.log('built', info.name, info.templateId.length > 0)
console.log('logs', JSON.stringify(logs))
console.log('exists', await Template.exists('tmpl-' + tok))
const sbx = await Sandbox.create('tmpl-' + tok)
const r = await sbx.commands.run('python3 -c "import ` + fakenet.PyPIPackage + `, os, urllib.request; print(` + fakenet.PyPIPackage + `.VALUE, os.environ[\'GREETING\'], urllib.request.urlopen(\'http://127.0.0.1:8000/hello.txt\').read().decode().strip())"')
console.log('run', r.stdout.trim())
const l = await sbx.commands.run('readlink /links/rel.txt /links/abs.txt; cat /links/rel.txt')
console.log('links', l.stdout.trim().split('\n').join(' '))
await sbx.kill()
`

// e2bDelete deletes template tmpl-TOK and says what it finds after.
const e2bDelete = `
import { Template } from 'e2b'
const del = async (name) => (await fetch(process.env.E2B_API_URL + '/templates/' + name, { method: 'DELETE', headers: { 'X-API-KEY': process.env.E2B_API_KEY } })).status
console.log('delete', await del('tmpl-' + process.env.TOK))
console.log('exists after', await Template.exists('tmpl-' + process.env.TOK))
console.log('delete again', await del('tmpl-' + process.env.TOK))
console.log('delete base', await del('base'))
`

// e2bOtherKey looks for another key's template.
const e2bOtherKey = `
import { Template, Sandbox } from 'e2b'
console.log('exists', await Template.exists('tmpl-' + process.env.TOK))
try {
	await Sandbox.create('tmpl-' + process.env.TOK)
	console.log('created')
} catch (e) {
	console.log('create', e.name, e.message)
}
const res = await fetch(process.env.E2B_API_URL + '/templates', { headers: { 'X-API-KEY': process.env.E2B_API_KEY } })
console.log('list', res.status, (await res.text()).includes('tmpl-' + process.env.TOK))
`

// TestE2BTemplateBuild: the e2b SDK's Template.build makes a template on
// boxer (fromTemplate, copy of local files, setEnvs, pipInstall from the
// fake internet's index through the build allowlist, setWorkdir,
// setStartCmd with a ready check); Sandbox.create of its alias runs in it
// with the package, the file, the variables and the started server. A
// failing step reaches the SDK as BuildError with the step's output, and
// leaves nothing behind. Another key neither sees, uses nor deletes the
// template; its own key deletes it, and its image goes with it.
func TestE2BTemplateBuild(t *testing.T) {
	n := internet(t)
	e := startE2B(t, "--e2b-build-allow-host", fakenet.PyPIName)
	tok := token(t)

	out := e.node(t, e.keys[0], e2bFailingBuild, "TOK="+tok)
	t.Logf("failing build:\n%s", out)
	if !strings.Contains(out, "error BuildError") || !strings.Contains(out, "exit status 3") ||
		!strings.Contains(out, "out-"+tok) || !strings.Contains(out, "err-"+tok) {
		t.Errorf("failing step: want BuildError naming exit status 3 with the step's output:\n%s", out)
	}
	if !strings.Contains(out, "RUN echo out-$MARK") {
		t.Errorf("failing step: the build's logs do not show the step:\n%s", out)
	}
	builds := filepath.Join(rootDir, "e2b-builds", namespace)
	if left := buildsLeft(builds); len(left) > 0 {
		t.Errorf("a failed build left uploads or contexts in %s: %v", builds, left)
	}

	ctx := t.TempDir()
	must(t, os.WriteFile(filepath.Join(ctx, "ca.pem"), n.CAPEM, 0o644))
	must(t, os.MkdirAll(filepath.Join(ctx, "site"), 0o755))
	must(t, os.WriteFile(filepath.Join(ctx, "site", "hello.txt"), []byte("file-"+tok+"\n"), 0o644))
	// copy('site/*') keeps the links it matches, as E2B's does.
	must(t, os.Symlink("hello.txt", filepath.Join(ctx, "site", "rel.txt")))
	must(t, os.Symlink("/nowhere/hello.txt", filepath.Join(ctx, "site", "abs.txt")))
	trust := strings.Join(n.TrustEnv("/etc/boxer-test-ca.pem"), " ")
	out = e.node(t, e.keys[0], e2bTemplateBuild, "TOK="+tok, "CTX="+ctx, "TRUST="+trust)
	t.Logf("build and sandbox:\n%s", out)
	if left := buildsLeft(builds); len(left) > 0 {
		t.Errorf("a build left uploads or contexts in %s: %v", builds, left)
	}
	for _, want := range []string{
		"built tmpl-" + tok + " true",
		"exists true",
		"run 42 hello-" + tok + " file-" + tok,
		"links hello.txt /nowhere/hello.txt file-" + tok,
		"pip install " + fakenet.PyPIPackage,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}

	out = e.node(t, e.keys[1], e2bOtherKey, "TOK="+tok, "E2B_API_URL="+e.api)
	for _, want := range []string{"exists false", "create SandboxError 404: templateID: template \"tmpl-" + tok + "\" not found", "list 200 false"} {
		if !strings.Contains(out, want) {
			t.Errorf("another key: missing %q in\n%s", want, out)
		}
	}
	// Deleted: by another key, not found; by its own, gone, its image
	// with it; the server's own templates are no key's.
	out = e.node(t, e.keys[1], e2bDelete, "TOK="+tok, "E2B_API_URL="+e.api)
	if !strings.Contains(out, "delete 404") || !strings.Contains(out, "exists after false") {
		t.Errorf("another key's delete:\n%s", out)
	}
	images := boxer(t, nil, "image", "ls").stdout
	if !strings.Contains(images, "boxer/e2b-tpl") {
		t.Errorf("no template image before the delete:\n%s", images)
	}
	out = e.node(t, e.keys[0], e2bDelete, "TOK="+tok, "E2B_API_URL="+e.api)
	for _, want := range []string{"delete 204", "exists after false", "delete again 404", "delete base 404"} {
		if !strings.Contains(out, want) {
			t.Errorf("delete: missing %q in\n%s", want, out)
		}
	}
	if images := boxer(t, nil, "image", "ls").stdout; strings.Contains(images, "boxer/e2b-tpl") {
		t.Errorf("the deleted template's image is left:\n%s", images)
	}
	// The failed build's sandbox, snapshot, mounts and lease went with
	// it; the good one's and the sandbox's with the server.
	e.stop(t)
	assertNoBuildLeft(t)
}

// buildsLeft is what a template build left in the server's builds
// directory: every entry but the templates it keeps for the next server.
func buildsLeft(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		if e.Name() != "templates.json" {
			left = append(left, e.Name())
		}
	}
	return left
}

// e2bKernelBuild builds a template whose step prints the kernel it runs
// on, and fails, so that its output is in the error.
const e2bKernelBuild = `
import { Template } from 'e2b'
try {
	await Template.build(Template().fromTemplate('base').runCmd('cat /proc/version; exit 3'), 'kernel-' + process.env.TOK)
	console.log('built')
} catch (e) {
	console.log('error', e.name, e.message)
}
`

// TestE2BTemplateBuildRunsc: on a server whose sandboxes run on gVisor, a
// template's steps (a caller's commands) do too, not on runc.
func TestE2BTemplateBuildRunsc(t *testing.T) {
	e := startE2B(t, "--runtime", "runsc")
	out := e.node(t, e.keys[0], e2bKernelBuild, "TOK="+token(t))
	host, err := os.ReadFile("/proc/version")
	must(t, err)
	if !strings.Contains(out, "error BuildError") || !strings.Contains(out, "Linux version") || strings.Contains(out, strings.TrimSpace(string(host))) {
		t.Errorf("a step on a runsc server: want it to fail printing gVisor's kernel, not the host's (%s):\n%s", host, out)
	}
	e.stop(t)
	assertNoBuildLeft(t)
}
