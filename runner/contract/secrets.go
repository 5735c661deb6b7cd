package contract

import (
	"fmt"
	"slices"
	"strings"

	"github.com/boxer-dev/boxer/secrets"
)

// Where a sandbox with secrets finds them (docs/reference.md, "Secrets").
const (
	// SecretsDir holds one file per delivered secret, NAME, mode 0400,
	// the sandbox user's, on a memory-backed mount.
	SecretsDir = "/run/secrets"
	// TrustBundle is the CA bundle of a run whose proxy injects headers:
	// the host's trust store and the run's own CA.
	TrustBundle = "/run/boxer/ca-bundle.pem"
	// SecretEnvOption asks for a secret as an environment variable too.
	SecretEnvOption = ",env"
)

// TrustEnv are the variables that point common clients at TrustBundle.
var TrustEnv = []string{
	"SSL_CERT_FILE=" + TrustBundle,
	"REQUESTS_CA_BUNDLE=" + TrustBundle,
	"CURL_CA_BUNDLE=" + TrustBundle,
	"NODE_EXTRA_CA_CERTS=" + TrustBundle,
	"PIP_CERT=" + TrustBundle,
	"GIT_SSL_CAINFO=" + TrustBundle,
}

// SecretRef is one entry of Request.Secrets: a secret's name, and whether
// the program also gets it as a variable.
type SecretRef struct {
	Name string
	Env  bool
}

// parseSecretRef reads "NAME" or "NAME,env".
func parseSecretRef(s string) (SecretRef, error) {
	name, env := strings.CutSuffix(s, SecretEnvOption)
	if err := secrets.CheckName(name); err != nil {
		return SecretRef{}, FieldErr(FieldSecrets, "%q: %v", s, err)
	}
	return SecretRef{Name: name, Env: env}, nil
}

// checkSecrets refuses malformed and repeated entries of Secrets.
func (r Request) checkSecrets() error {
	seen := map[string]bool{}
	for _, s := range r.Secrets {
		ref, err := parseSecretRef(s)
		if err != nil {
			return err
		}
		if seen[ref.Name] {
			return FieldErr(FieldSecrets, "name %s more than once", ref.Name)
		}
		seen[ref.Name] = true
	}
	return nil
}

// SecretRefs are a checked request's secrets.
func (r Request) SecretRefs() []SecretRef {
	refs := make([]SecretRef, 0, len(r.Secrets))
	for _, s := range r.Secrets {
		if ref, err := parseSecretRef(s); err == nil {
			refs = append(refs, ref)
		}
	}
	return refs
}

// secretsShape is the part of a Shape its secrets make: the entries,
// sorted (their values are delivered; which exist is the sandbox's
// mounts, variables and trust bundle).
func (r Request) secretsShape() string {
	s := slices.Clone(r.Secrets)
	slices.Sort(s)
	return strings.Join(s, "\x00")
}

// SecretPlan is what a run's secrets become.
type SecretPlan struct {
	// Files are the secrets delivered in SecretsDir (Env: and as a
	// variable), in request order.
	Files []SecretRef
	// Inject are the operator's rules this run uses: every secret of their
	// templates is named by the request. Those secrets never enter the
	// sandbox.
	Inject []secrets.Injection
	// Names are all the request's secrets, masked in its output.
	Names []string
}

// PlanSecrets sorts a request's secrets into delivered ones and injection
// rules. A secret that any rule uses is the proxy's alone: it is never
// delivered, even when the request does not name the rule's other secrets.
func PlanSecrets(refs []SecretRef, rules []secrets.Injection) SecretPlan {
	var p SecretPlan
	named := map[string]bool{}
	for _, ref := range refs {
		named[ref.Name] = true
		p.Names = append(p.Names, ref.Name)
	}
	injected := InjectedSecrets(rules)
	for _, rule := range rules {
		if allNamed(rule.Template.Names(), named) {
			p.Inject = append(p.Inject, rule)
		}
	}
	for _, ref := range refs {
		if _, ok := injected[ref.Name]; !ok {
			p.Files = append(p.Files, ref)
		}
	}
	return p
}

// InjectedSecrets maps each secret the rules use to a host it goes to.
func InjectedSecrets(rules []secrets.Injection) map[string]string {
	hosts := map[string]string{}
	for _, rule := range rules {
		for _, n := range rule.Template.Names() {
			hosts[n] = rule.Host
		}
	}
	return hosts
}

func allNamed(names []string, named map[string]bool) bool {
	for _, n := range names {
		if !named[n] {
			return false
		}
	}
	return len(names) > 0
}

// EnvNames are the secrets the program gets as variables.
func (p SecretPlan) EnvNames() []string {
	var names []string
	for _, f := range p.Files {
		if f.Env {
			names = append(names, f.Name)
		}
	}
	return names
}

// Mounts says whether the sandbox needs its /run mount.
func (p SecretPlan) Mounts() bool { return len(p.Files) > 0 || len(p.Inject) > 0 }

// InjectedHeader names a header boxer's proxy set for a run (never its
// value).
type InjectedHeader struct {
	Host   string `json:"host"`
	Header string `json:"header"`
}

// InjectedHeaders are the result's view of a plan's rules.
func (p SecretPlan) InjectedHeaders() []InjectedHeader {
	var out []InjectedHeader
	for _, rule := range p.Inject {
		out = append(out, InjectedHeader{Host: rule.Host, Header: rule.Header})
	}
	return out
}

// FileNames are the names of the delivered secrets.
func (p SecretPlan) FileNames() []string {
	var names []string
	for _, f := range p.Files {
		names = append(names, f.Name)
	}
	return names
}

// SecretEnvScript wraps args so that the program starts with the named
// secrets as variables, read from their files by the shell at start: the
// values are in the program's environment, never in the spec. Like any
// $(...), it drops the value's trailing newlines. As the gate does, it
// unsets the PWD dash exports unless env sets it.
func SecretEnvScript(args, names, env []string) []string {
	var b strings.Builder
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PWD=") }) {
		b.WriteString("unset PWD && ")
	}
	for _, n := range names {
		fmt.Fprintf(&b, `%s="$(cat %s/%s)" && export %s && `, n, SecretsDir, n, n)
	}
	b.WriteString(`exec "$@"`)
	return append([]string{"/bin/sh", "-c", b.String(), "sh"}, args...)
}
