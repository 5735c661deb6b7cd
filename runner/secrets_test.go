package runner

import (
	"reflect"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/boxer-dev/boxer/secrets"
)

func TestCheckSecrets(t *testing.T) {
	for _, tc := range []struct {
		secrets []string
		want    string
	}{
		{[]string{"API_KEY", "DB_PASSWORD,env"}, ""},
		{[]string{"9LIVES"}, `secrets "9LIVES"`},
		{[]string{"A-B"}, `secrets "A-B"`},
		{[]string{"A,file"}, `secrets "A,file"`},
		{[]string{"A", "A,env"}, "secrets name A more than once"},
	} {
		r := contract.Request{Lang: "python", Code: []byte("1"), Secrets: tc.secrets}
		_, err := r.Normalize()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.secrets, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%v: %v, want %q", tc.secrets, err, tc.want)
		}
	}
}

func mustInjection(t *testing.T, text string) secrets.Injection {
	t.Helper()
	in, err := secrets.ParseInjection(text)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestPlanSecrets: a secret that any rule uses is never delivered; a rule
// applies when the request names all of its secrets.
func TestPlanSecrets(t *testing.T) {
	rules := []secrets.Injection{
		mustInjection(t, "api.example.com:Authorization=Bearer {{secret:KEY}}"),
		mustInjection(t, "db.example.com:X-Auth={{secret:USER}}:{{secret:PASS}}"),
	}
	refs := []contract.SecretRef{{Name: "KEY"}, {Name: "TOKEN", Env: true}, {Name: "USER"}}
	p := contract.PlanSecrets(refs, rules)
	if want := []contract.SecretRef{{Name: "TOKEN", Env: true}}; !reflect.DeepEqual(p.Files, want) {
		t.Errorf("files %v, want %v", p.Files, want)
	}
	if len(p.Inject) != 1 || p.Inject[0].Host != "api.example.com" {
		t.Errorf("inject %v, want the api.example.com rule alone (PASS is not named)", p.Inject)
	}
	if want := []string{"KEY", "TOKEN", "USER"}; !reflect.DeepEqual(p.Names, want) {
		t.Errorf("masked names %v, want %v", p.Names, want)
	}
	if want := []string{"TOKEN"}; !reflect.DeepEqual(p.EnvNames(), want) {
		t.Errorf("env names %v", p.EnvNames())
	}
	if got := p.InjectedHeaders(); len(got) != 1 || got[0] != (contract.InjectedHeader{Host: "api.example.com", Header: "Authorization"}) {
		t.Errorf("injected headers %v", got)
	}
	if p := contract.PlanSecrets(nil, rules); p.Mounts() {
		t.Errorf("a run without secrets mounts /run")
	}
}

// TestSecretsShape: the secrets are shape (a pre-created sandbox has no
// /run mount), whatever their order.
func TestSecretsShape(t *testing.T) {
	a := shapeOf(contract.Request{Lang: "python", Secrets: []string{"A", "B,env"}})
	b := shapeOf(contract.Request{Lang: "python", Secrets: []string{"B,env", "A"}})
	c := shapeOf(contract.Request{Lang: "python", Secrets: []string{"A", "B"}})
	if a != b || a == c || a == shapeOf(contract.Request{Lang: "python"}) {
		t.Errorf("shapes: %q %q %q", a.Secrets, b.Secrets, c.Secrets)
	}
}

// TestSpecWithSecrets: the spec holds the /run mount (read-only), the trust
// variables and the variable wrapper, and no value can be in it: buildSpec
// is never given one.
func TestSpecWithSecrets(t *testing.T) {
	req, err := contract.Request{Lang: "python", Code: []byte("1"), Secrets: []string{"TOKEN,env"}, Env: []string{"SSL_CERT_FILE=/mine.pem"}}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	dirs := box.Dirs{Code: "/c", Workspace: "/w", Run: "/state/runs/x/run", SecretEnv: []string{"TOKEN"}, Trust: true}
	spec, err := box.BuildSpec("x", req, nil, box.HostFacts{Namespace: "boxer", NoFile: 1024, Init: "/boxer-init"}, dirs, false)
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
