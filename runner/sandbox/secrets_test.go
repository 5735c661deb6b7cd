package sandbox

import (
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/runner/contract"
)

// TestSpecWithSecrets: the spec holds the /run mount (read-only), the trust
// variables and the variable wrapper, and no value can be in it: buildSpec
// is never given one.
func TestSpecWithSecrets(t *testing.T) {
	req, err := contract.Request{Lang: "python", Code: []byte("1"), Secrets: []string{"TOKEN,env"}, Env: []string{"SSL_CERT_FILE=/mine.pem"}}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	dirs := Dirs{Code: "/c", Workspace: "/w", Run: "/state/runs/x/run", SecretEnv: []string{"TOKEN"}, Trust: true}
	spec, err := BuildSpec("x", req, nil, HostFacts{Namespace: "boxer", NoFile: 1024, Init: "/boxer-init"}, dirs, false)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range spec.Mounts {
		if m.Destination == "/run" {
			found = m.Source == dirs.Run && m.Type == "bind" && strings.Contains(strings.Join(m.Options, ","), "ro")
		}
	}
	if !found {
		t.Errorf("no read-only bind of %s at /run: %+v", dirs.Run, spec.Mounts)
	}
	args := spec.Process.Args[2:] // after boxer-init and its "--"
	if len(args) < 5 || args[0] != "/bin/sh" || !strings.Contains(args[2], `TOKEN="$(cat /run/secrets/TOKEN)" && export TOKEN`) || !strings.Contains(args[2], `exec "$@"`) || args[4] != "python3" {
		t.Errorf("args %q: want the variable wrapper around the preset's command", args)
	}
	env := strings.Join(spec.Process.Env, "\n")
	for _, kv := range []string{"REQUESTS_CA_BUNDLE=" + contract.TrustBundle, "NODE_EXTRA_CA_CERTS=" + contract.TrustBundle, "SSL_CERT_FILE=/mine.pem"} {
		if !strings.Contains(env, kv) {
			t.Errorf("env lacks %s (the caller's --env wins over the trust variables): %s", kv, env)
		}
	}
}
