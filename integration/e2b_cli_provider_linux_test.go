package integration

import (
	"testing"
)

// An agent framework's E2B provider, unchanged, against boxer serve:
// Mastra's workspace sandbox (@mastra/e2b, pinned in package-lock.json)
// with a template of boxer's makes its sandbox (always with onTimeout:
// 'pause'), runs commands and processes, writes and reads files, pauses
// (stop) and finds it again by its metadata (start), and kills it; with
// its default it builds its own template (aptInstall), which boxer builds
// and whose apt-get fails without network.

func TestE2BProvider(t *testing.T) {
	for _, c := range []struct{ runtime, template string }{
		{"runc", "base"},
		{"runsc", "bash"},
	} {
		t.Run(c.runtime, func(t *testing.T) {
			e := startE2B(t, "--runtime", c.runtime)
			out := lines(e.node(t, e.keys[0], envdScript(t, "mastra_provider.mjs"), "TEMPLATE="+c.template))
			checkLines(t, "provider", out, []string{
				`started running true`,
				`command 0 true "hello from /home/user\n"`,
				`exit 4 false`,
				`read from mastra 3`,
				`process 0 "got typed\n"`,
				`listed true`,
				`killed true`,
				`port url true`,
				`stopped stopped`,
				`again running true from mastra`,
				`destroyed destroyed`,
				`default BuildError step:1: RUN apt-get update && DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes apt-get install -y s3fs fuse: exit status 100`,
			})
			e.stop(t)
		})
	}
	assertClean(t)
}
