package keeper

// A session's secrets: delivered as a run's, held for its life by its keeper.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/boxer-dev/boxer/secrets"
	"github.com/containerd/log"
	"golang.org/x/sys/unix"
)

// A session with secrets gets them as a run does when it is made: the
// delivered ones in SecretsDir on the memory-backed /run of its run
// directory, the trust bundle with its own CA when its gateway injects
// headers. What outlives the command that made it is the rest: the values
// that mask the output of every call and process, and the injections and
// CA's key its gateway needs. Those its maker hands to the session's
// keeper, which lives as long as the session, over a pipe (Handoff,
// keeperSecretsEnv): never a file, a command line, an environment or
// containerd. The keeper masks its processes' output before it keeps it,
// and answers a call's command with the values to mask the call's output
// with (keeper.sock, root's alone). A keeper started again later (the
// first died) finds the delivered values where the sandbox reads them;
// the injected ones, and the CA's key, died with the first: its gateway
// passes the injected hosts through untouched, so no value the sandbox
// never held can reach it any more.

const (
	// keeperSecretsEnv tells a keeper that its session's secrets
	// (Secrets, as JSON) come on the pipe of that file number.
	keeperSecretsEnv = "BOXER_KEEPER_SECRETS"
	// keeperLockEnv tells a keeper that its lock, held, is that file
	// number.
	keeperLockEnv = "BOXER_KEEPER_LOCK"
	// handoffTimeout bounds the handing of the secrets to a keeper.
	handoffTimeout = 10 * time.Second
)

// Secrets is what a session's keeper holds of its secrets.
type Secrets struct {
	// Masks are every secret of the session, masked in its output.
	Masks []secrets.Named `json:"masks"`
	// Inject are the headers its gateway sets, with the CA that
	// terminates TLS for their hosts.
	Inject []egress.Injection `json:"inject,omitempty"`
	CACert []byte             `json:"ca_cert,omitempty"`
	CAKey  []byte             `json:"ca_key,omitempty"`
}

// Handoff is what a session's maker hands its keeper: the
// gateway's sockets (none without network), its lock, held, and its
// secrets (nil without).
type Handoff struct {
	gateway []*os.File
	lock    *os.File
	Secrets *Secrets
}

// close closes the handoff's files (this process's copies).
func (h Handoff) close() {
	for _, f := range h.gateway {
		f.Close()
	}
	if h.lock != nil {
		h.lock.Close()
	}
}

// SecretsOf is what the keeper of session sb holds; nil for a
// session without secrets.
func (r *Layer) SecretsOf(sb *box.Sandbox) (*Secrets, error) {
	if len(sb.Plan.Names) == 0 {
		return nil, nil
	}
	ks := &Secrets{Masks: r.Named(sb.Plan.Names), Inject: sb.Injections}
	if sb.CA != nil {
		key, err := sb.CA.KeyPEM()
		if err != nil {
			return nil, err
		}
		ks.CACert, ks.CAKey = sb.CA.CertPEM(), key
	}
	return ks, nil
}

// HandKeeper starts the keeper of made session sb with its lock, held,
// its gateway's sockets and its secrets: a keeper another command starts
// meanwhile finds the session kept, and cannot serve it without them.
func (r *Layer) HandKeeper(ctx context.Context, sb *box.Sandbox, h Handoff) error {
	lock, err := os.OpenFile(filepath.Join(sb.RunDir, keeperLock), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		if err = unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			lock.Close()
		}
	}
	if err != nil {
		h.close()
		return fmt.Errorf("locking the session's keeper: %w", err)
	}
	h.lock = lock
	if _, err := r.SpawnKeeper(sb.RunDir, sb.ID, h); err != nil {
		return err
	}
	log.G(ctx).Debugf("session %s: its keeper holds it", sb.ID)
	return nil
}

// handSecrets writes ks to the keeper's end of a pipe and closes it. The
// encoded copy is cleared once written.
func handSecrets(w *os.File, ks *Secrets) error {
	defer w.Close()
	data, err := json.Marshal(ks)
	if err != nil {
		return err
	}
	defer clear(data)
	_ = w.SetWriteDeadline(time.Now().Add(handoffTimeout))
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("handing the session's secrets to its keeper: %w", err)
	}
	return nil
}

// inheritedSecrets reads the secrets the keeper's maker handed it; nil
// when it handed none.
func inheritedSecrets() (*Secrets, error) {
	n, err := strconv.Atoi(os.Getenv(keeperSecretsEnv))
	if err != nil {
		return nil, nil
	}
	os.Unsetenv(keeperSecretsEnv)
	f := os.NewFile(uintptr(n), "secrets")
	defer f.Close()
	_ = f.SetReadDeadline(time.Now().Add(handoffTimeout))
	data, err := io.ReadAll(io.LimitReader(f, 4*secrets.MaxSecrets*secrets.MaxValueBytes+1<<20))
	defer clear(data)
	if err != nil {
		return nil, fmt.Errorf("reading the session's secrets: %w", err)
	}
	var ks Secrets
	if err := json.Unmarshal(data, &ks); err != nil {
		return nil, fmt.Errorf("reading the session's secrets: %w", err)
	}
	return &ks, nil
}

// deliveredSecrets are the session's secrets a keeper started again
// finds: those delivered in its sandbox's /run (the injected ones were
// its first keeper's alone).
func deliveredSecrets(runDir string, rec keptRecord) *Secrets {
	if len(rec.Request.Secrets) == 0 {
		return nil
	}
	ks := &Secrets{}
	for _, ref := range rec.Request.SecretRefs() {
		value, err := os.ReadFile(filepath.Join(reaper.RunMountDir(runDir), filepath.Base(contract.SecretsDir), ref.Name))
		if err == nil {
			ks.Masks = append(ks.Masks, secrets.Named{Name: ref.Name, Value: value})
		}
	}
	return ks
}

// keptRecord is what a keeper reads of its session's record (package
// session's sessionRecord, in RecordFile).
type keptRecord struct {
	Request   contract.Request `json:"request"`
	SecretEnv []string         `json:"secret_env,omitempty"`
	// ProcServer: its processes start through its process server.
	ProcServer bool `json:"proc_server,omitempty"`
	// Driver is its interpreter's command, which its keeper starts
	// through its process server and whose wire it relays.
	Driver []string `json:"driver,omitempty"`
}

// RecordFile is a session's record in its run directory.
const RecordFile = "session.json"

// readSessionRecord reads the record of the session in runDir.
func readSessionRecord(runDir string) (keptRecord, error) {
	var rec keptRecord
	data, err := os.ReadFile(filepath.Join(runDir, RecordFile))
	if err == nil {
		err = json.Unmarshal(data, &rec)
	}
	return rec, err
}

// gatewayCA is the CA the keeper's gateway injects headers with; nil
// without injections.
func (ks *Secrets) gatewayCA() (*egress.CA, error) {
	if ks == nil || len(ks.Inject) == 0 {
		return nil, nil
	}
	return egress.ParseCA(ks.CACert, ks.CAKey)
}

// masks are the values the keeper masks, none without secrets.
func (ks *Secrets) masks() []secrets.Named {
	if ks == nil {
		return nil
	}
	return ks.Masks
}

// SessionMasks are the values that mask the output of a call in s: its
// keeper's. A session with secrets whose keeper cannot be reached is
// refused the call: its output would go unmasked.
func (r *Layer) SessionMasks(ctx context.Context, id string, req contract.Request) ([]secrets.Named, error) {
	if len(req.Secrets) == 0 {
		return nil, nil
	}
	var masks []secrets.Named
	err := r.toKeeper(ctx, id, "", func(kc *Client) error {
		return kc.Call(ctx, "GET", "/masks", nil, nil, &masks)
	})
	if err != nil {
		return nil, fmt.Errorf("the session's keeper, which masks its secrets, cannot be reached: %w", err)
	}
	return masks, nil
}

// MaskCall puts masks between a call's program and its capped streams;
// flush passes on what they held back once the call is over.
func MaskCall(masks []secrets.Named, stdout, stderr io.Writer) (io.Writer, io.Writer, func()) {
	if len(masks) == 0 {
		return stdout, stderr, func() {}
	}
	mo, me := secrets.NewMasker(stdout, masks), secrets.NewMasker(stderr, masks)
	return mo, me, func() {
		_ = mo.Flush()
		_ = me.Flush()
	}
}

// WithSecretEnv wraps a session process's args so that it starts with
// the session's ",env" secrets as variables (secretEnvScript).
func WithSecretEnv(args, names, env []string) []string {
	if len(names) == 0 {
		return args
	}
	return contract.SecretEnvScript(args, names, env)
}

// keeperEnv is the environment a keeper starts with: this process's,
// without the variables that hold a secret's value (a --secret NAME
// read from this process's environment), and without the handoff's.
func (r *Layer) keeperEnv() []string {
	var values [][]byte
	for _, name := range r.Secrets.Names() {
		if v, ok := r.Secrets.Lookup(name); ok {
			if v = bytes.TrimRight(v, "\r\n"); len(v) > 0 {
				values = append(values, v)
			}
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		if name == keeperGatewayEnv || name == keeperLockEnv || name == keeperSecretsEnv {
			continue
		}
		if !containsAny([]byte(value), values) {
			env = append(env, kv)
		}
	}
	return env
}

func containsAny(b []byte, values [][]byte) bool {
	for _, v := range values {
		if bytes.Contains(b, v) {
			return true
		}
	}
	return false
}

// ErrSecretsKeeper: a session with secrets needs a keeper to hold them.
var ErrSecretsKeeper = errors.New("needs the session's keeper to hold them, which this boxer cannot start: use the boxer binary")
