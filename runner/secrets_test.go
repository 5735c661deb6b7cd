package runner

import (
	"reflect"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/runner/contract"
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
