package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/secrets"
	"golang.org/x/sys/unix"
)

// runMountBytes sizes the memory-backed /run of a sandbox with secrets:
// room for every secret at its largest and a trust bundle.
const runMountBytes = secrets.MaxSecrets*secrets.MaxValueBytes + 4<<20

// hostCertFiles are where distributions keep their CA bundle (Go's list):
// the first that exists is the host's trust store.
var hostCertFiles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/cacert.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// prepareSecrets gives the sandbox what its secrets become: a
// memory-backed directory, bound read-only at /run, with each delivered
// secret in secrets/NAME (0400, the sandbox user's) and, when the run's
// proxy injects headers, the trust bundle with the run's own CA. Nothing of
// it is in the sandbox's spec but the mount.
func (sb *Sandbox) prepareSecrets() error {
	sb.Plan = contract.PlanSecrets(sb.Req.SecretRefs(), sb.h.Inject)
	if !sb.Plan.Mounts() {
		return nil
	}
	dir := reaper.RunMountDir(sb.RunDir)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("creating the secrets mount: %w", err)
	}
	opts := "size=" + strconv.Itoa(runMountBytes) + ",mode=0755"
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, opts); err != nil {
		return fmt.Errorf("mounting the secrets mount: %w", err)
	}
	sb.Dirs.Run = dir
	if len(sb.Plan.Files) > 0 {
		if err := sb.writeSecrets(filepath.Join(dir, "secrets")); err != nil {
			return err
		}
		sb.Dirs.SecretEnv = sb.Plan.EnvNames()
	}
	if len(sb.Plan.Inject) > 0 {
		return sb.prepareInjection(dir)
	}
	return nil
}

// writeSecrets writes the delivered secrets into dir, readable by the
// sandbox user only.
func (sb *Sandbox) writeSecrets(dir string) error {
	hu, hg := sb.HostIDs()
	uid, gid := int(hu), int(hg)
	if err := os.Mkdir(dir, 0o500); err != nil {
		return fmt.Errorf("creating %s: %w", contract.SecretsDir, err)
	}
	for _, f := range sb.Plan.Files {
		value, ok := sb.h.Secrets.Lookup(f.Name)
		if !ok {
			return contract.FieldErr(contract.FieldSecrets, "names %s, which boxer was not given", f.Name)
		}
		if err := writeSecret(filepath.Join(dir, f.Name), value, uid, gid); err != nil {
			return fmt.Errorf("writing secret %s: %w", f.Name, err)
		}
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		return fmt.Errorf("creating %s: %w", contract.SecretsDir, err)
	}
	return nil
}

func writeSecret(path string, value []byte, uid, gid int) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o400)
	if err != nil {
		return err
	}
	_, err = f.Write(value)
	if err == nil {
		err = f.Chown(uid, gid)
	}
	return errors.Join(err, f.Close())
}

// prepareInjection makes the run's CA, writes the trust bundle the
// sandbox's clients are pointed at, and renders the headers the proxy
// sets.
func (sb *Sandbox) prepareInjection(dir string) error {
	newCA := egress.NewCA
	if until := sb.session().CAUntil(); !until.IsZero() {
		// A session's lives as long as the session may.
		newCA = func() (*egress.CA, error) { return egress.NewCAUntil(until) }
	}
	ca, err := newCA()
	if err != nil {
		return fmt.Errorf("making the run's CA: %w", err)
	}
	bundle, err := hostTrustBundle()
	if err != nil {
		return err
	}
	if len(bundle) > 0 && !bytes.HasSuffix(bundle, []byte("\n")) {
		bundle = append(bundle, '\n')
	}
	bundle = append(bundle, ca.CertPEM()...)
	boxerDir := filepath.Join(dir, filepath.Base(filepath.Dir(contract.TrustBundle)))
	if err := os.Mkdir(boxerDir, 0o755); err != nil {
		return fmt.Errorf("writing the trust bundle: %w", err)
	}
	if err := os.WriteFile(filepath.Join(boxerDir, filepath.Base(contract.TrustBundle)), bundle, 0o444); err != nil {
		return fmt.Errorf("writing the trust bundle: %w", err)
	}
	for _, rule := range sb.Plan.Inject {
		value, err := rule.Template.Render(sb.h.Secrets.Lookup)
		if err != nil {
			return contract.FieldErr(contract.FieldSecrets, "--inject %s: %v", rule.Host, err)
		}
		sb.Injections = append(sb.Injections, egress.Injection{Host: rule.Host, Header: rule.Header, Value: value})
	}
	sb.CA, sb.Dirs.Trust = ca, true
	return nil
}

// hostTrustBundle is the host's CA bundle, which the sandbox keeps
// trusting for the hosts the proxy does not intercept: the file
// SSL_CERT_FILE names, as for boxer's own connections, or the
// distribution's. None is no error: the bundle then holds the run's CA
// alone.
func hostTrustBundle() ([]byte, error) {
	if f := os.Getenv("SSL_CERT_FILE"); f != "" {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading the host's trust store (SSL_CERT_FILE): %w", err)
		}
		return data, nil
	}
	for _, f := range hostCertFiles {
		data, err := os.ReadFile(f)
		if err == nil {
			return data, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("reading the host's trust store: %w", err)
		}
	}
	return nil, nil
}

// MaskOutput puts the masks of the run's secrets between the program's
// streams and what boxer keeps and shows of them.
func (sb *Sandbox) MaskOutput(stdout, stderr io.Writer) (io.Writer, io.Writer) {
	named := sb.h.Named(sb.Plan.Names)
	if len(named) == 0 {
		return stdout, stderr
	}
	sb.masks = []*secrets.Masker{secrets.NewMasker(stdout, named), secrets.NewMasker(stderr, named)}
	return sb.masks[0], sb.masks[1]
}

// flushMasks passes on what the masks held back once the output is over.
func (sb *Sandbox) flushMasks() {
	for _, m := range sb.masks {
		_ = m.Flush()
	}
}

// CheckSecretsAvailable refuses a normalized request naming a secret the
// Host does not hold, asking for a variable of a secret that is only
// injected, or using an injection rule its allowlist cannot reach.
func (h *Host) CheckSecretsAvailable(req contract.Request) error {
	refs := req.SecretRefs()
	for _, ref := range refs {
		if _, ok := h.Secrets.Lookup(ref.Name); !ok {
			return contract.FieldErr(contract.FieldSecrets, "names %s, which boxer was not given (give it with --secret %s or put it in --secrets-dir)", ref.Name, ref.Name)
		}
	}
	plan := contract.PlanSecrets(refs, h.Inject)
	injected := contract.InjectedSecrets(h.Inject)
	for _, ref := range refs {
		if host, ok := injected[ref.Name]; ok && ref.Env {
			return contract.FieldErr(contract.FieldSecrets, "%s%s: %s is only injected into requests to %s and never enters the sandbox: drop %s", ref.Name, contract.SecretEnvOption, ref.Name, host, contract.SecretEnvOption)
		}
	}
	if len(plan.Inject) == 0 {
		return nil
	}
	policy, err := egress.ParsePolicy(req.AllowHosts)
	if err != nil {
		return contract.FieldErr(contract.FieldAllowHosts, "%v", err)
	}
	for _, rule := range plan.Inject {
		if !policy.NameKnown(rule.Host) {
			return contract.FieldErr(contract.FieldSecrets, "%s: its header is injected into requests to %s, which {allow_hosts} does not reach: allow %s", strings.Join(rule.Template.Names(), ", "), rule.Host, rule.Host)
		}
	}
	return nil
}

// Named are the values of names that the Host holds.
func (h *Host) Named(names []string) []secrets.Named {
	var named []secrets.Named
	for _, name := range names {
		if value, ok := h.Secrets.Lookup(name); ok {
			named = append(named, secrets.Named{Name: name, Value: value})
		}
	}
	return named
}
