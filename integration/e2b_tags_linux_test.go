package integration

import (
	"regexp"
	"strings"
	"testing"
)

// e2bTagsBuild builds tags-TOK twice, as tags-TOK:v1 and as tags-TOK
// (latest), each writing its own /tagged.txt, and reads them back from
// sandboxes of each tag; then assigns prod to v1's build, lists the
// tags, and removes v1.
const e2bTagsBuild = `
import { Template, Sandbox } from 'e2b'
const name = 'tags-' + process.env.TOK
const build = async (ref, word, opts) => {
	const t = Template().fromTemplate('base').runCmd('echo ' + word + ' > /tmp/w && cp /tmp/w /tagged.txt')
	const info = await Template.build(t, ref, opts)
	console.log('built', ref, JSON.stringify(info.tags))
	console.log('id', info.templateId)
}
const read = async (ref) => {
	try {
		const sbx = await Sandbox.create(ref)
		const r = await sbx.commands.run('cat /tagged.txt')
		await sbx.kill()
		console.log('read', ref, r.stdout.trim())
	} catch (e) {
		console.log('read', ref, e.name, e.message)
	}
}
await build(name + ':v1', 'one')
await build(name, 'two', { tags: ['stable'] })
await read(name + ':v1')
await read(name)
await read(name + ':stable')
const a = await Template.assignTags(name + ':v1', 'prod')
console.log('assigned', JSON.stringify(a.tags), a.buildId.length > 0)
await read(name + ':prod')
console.log('exists', await Template.exists(name + ':prod'))
const tags = async () => (await Template.getTags(name)).map((g) => g.tag + (g.createdAt instanceof Date ? '' : '?')).join(',')
console.log('tags', await tags())
for (const bad of [':invalid-tag', name + ':']) {
	try {
		await Template.assignTags(name + ':v1', bad)
		console.log('assigned bad', bad)
	} catch (e) {
		console.log('refused', bad, e.name)
	}
}
await Template.removeTags(name, 'v1')
console.log('tags after', await tags())
await read(name + ':v1')
await read(name + ':prod')
`

// e2bTagsStranger tries another key's template tags.
const e2bTagsStranger = `
import { Template, Sandbox } from 'e2b'
const name = 'tags-' + process.env.TOK
const attempt = async (what, f) => {
	try {
		await f()
		console.log(what, 'done')
	} catch (e) {
		console.log(what, e.name, e.message.includes('not found'))
	}
}
await attempt('list', () => Template.getTags(name))
await attempt('assign', () => Template.assignTags(name + ':prod', 'mine'))
await attempt('remove', () => Template.removeTags(name, 'prod'))
await attempt('create', () => Sandbox.create(name + ':prod', { timeoutMs: 20000 }))
console.log('exists', await Template.exists(name + ':prod'))
`

// e2bTagsAfter reads the tags a server kept, from the next one.
const e2bTagsAfter = `
import { Template, Sandbox } from 'e2b'
const name = 'tags-' + process.env.TOK
console.log('tags', (await Template.getTags(name)).map((g) => g.tag).join(','))
const sbx = await Sandbox.create(name + ':prod')
console.log('read prod', (await sbx.commands.run('cat /tagged.txt')).stdout.trim())
await sbx.kill()
const res = await fetch(process.env.E2B_API_URL + '/templates/' + name, { method: 'DELETE', headers: { 'X-API-KEY': process.env.E2B_API_KEY } })
console.log('delete', res.status)
`

// TestE2BTemplateTags: through the e2b SDK, Template.build with a tag
// ('name:v1') and with none (latest, with the tags option's), each tag a
// sandbox of its own build; assignTags names a build again, getTags
// lists them, removeTags removes one (a sandbox of it is then not
// found, its build's image kept while another tag names it); E2B's bad
// tags are refused; another key can neither list, assign, remove nor use
// them; the next server has them.
func TestE2BTemplateTags(t *testing.T) {
	e := startE2B(t)
	tok := token(t)
	name := "tags-" + tok
	out := e.node(t, e.keys[0], e2bTagsBuild, "TOK="+tok)
	t.Logf("tags:\n%s", out)
	for _, want := range []string{
		"built " + name + `:v1 ["v1"]`,
		"built " + name + ` ["stable"]`,
		"read " + name + ":v1 one",
		"read " + name + " two",
		"read " + name + ":stable two",
		`assigned ["prod"] true`,
		"read " + name + ":prod one",
		"exists true",
		"tags prod,stable,v1\n",
		"refused :invalid-tag TemplateError",
		"refused " + name + ": TemplateError",
		"tags after prod,stable\n",
		"read " + name + ":v1 SandboxError 404",
		"read " + name + ":prod one",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	id := regexp.MustCompile(`id (tpl\w+)`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("no template ID in\n%s", out)
	}
	// Two builds, each tagged: two images.
	if images := boxer(t, nil, "image", "ls").stdout; strings.Count(images, "boxer/e2b-"+id[1]+"-") != 2 {
		t.Errorf("want two images of %s:\n%s", id[1], images)
	}
	out = e.node(t, e.keys[1], e2bTagsStranger, "TOK="+tok)
	t.Logf("another key:\n%s", out)
	for _, want := range []string{"list TemplateError true", "assign TemplateError true", "remove TemplateError true", "create SandboxError", "exists false"} {
		if !strings.Contains(out, want) {
			t.Errorf("another key: missing %q in\n%s", want, out)
		}
	}
	e.stop(t)
	e.server = startServer(t, e.args...)
	out = e.node(t, e.keys[0], e2bTagsAfter, "TOK="+tok)
	if !strings.Contains(out, "tags prod,stable\n") || !strings.Contains(out, "read prod one") || !strings.Contains(out, "delete 204") {
		t.Errorf("the next server's tags, and the delete:\n%s", out)
	}
	// Deleted, the template's builds' images go with it.
	if images := boxer(t, nil, "image", "ls").stdout; strings.Contains(images, "boxer/e2b-"+id[1]) {
		t.Errorf("the deleted template's images are left:\n%s", images)
	}
	e.stop(t)
	assertNoBuildLeft(t)
}
