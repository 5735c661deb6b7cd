package integration

import (
	"strings"
	"testing"
)

// TestUsernsRootOwners: in a sandbox's own user namespace the image's
// files show their owners as in the image (root's are uid 0, not the
// overflow id), through a root idmapped for it; the root stays read-only
// to uid 0 inside, which now owns them; and the mount goes with the run.
func TestUsernsRootOwners(t *testing.T) {
	const code = `
import errno, os
print(os.stat("/usr/bin/python3").st_uid, os.stat("/etc/passwd").st_gid)
for p in ("/x", "/etc/passwd"):
    try:
        open(p, "a").close(); print(p, "WRITABLE")
    except OSError as e:
        print(p, errno.errorcode[e.errno])
`
	for _, rt := range []string{"runc", "runsc"} {
		for _, mode := range []string{"private", "host"} {
			res := pythonIn(t, []string{"BOXER_USERNS=" + mode}, code, "--runtime", rt, "--user", "0:0")
			want := "0 0\n/x EROFS\n/etc/passwd EROFS\n"
			if res.ExitCode != 0 || res.Stdout != want {
				t.Errorf("%s, %s user namespace: exit %d %q %s, want %q", rt, mode, res.ExitCode, res.Stdout, strings.TrimSpace(res.Stderr), want)
			}
		}
	}
	assertClean(t)
}
