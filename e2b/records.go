package e2b

// What E2B keeps beside a session, kept where the next server finds it.

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/e2b/interp"
	"github.com/boxer-dev/boxer/runner"
)

// A sandbox is its session (the node's, in containerd) and what E2B keeps
// beside it: its template, env vars, metadata, network, code contexts and
// auto-pause timer. A server that is killed or upgraded is followed by the
// next one on the node, which takes the sessions over (runner's
// AdoptSessions) and must answer for their sandboxes as the first did. So
// each sandbox's record is a file in Config.Records, sealed (AES-GCM,
// the sandbox's ID as its associated data) with a key derived from the
// node's secret there; and its access tokens are never stored at all:
// each is an HMAC of its ID under that secret, which the next server
// derives again. The directory is root's (0700), on boxer's state
// directory (a tmpfs: the secret and records end with the node's
// sessions, at reboot).
const (
	// secretFile holds the node's 32 random bytes.
	secretFile = "secret"
	// recordExt ends a record's file name: "<ID>.rec".
	recordExt = ".rec"
	// maxRecord bounds a record read back: env vars and metadata come
	// in a create body, which MaxBody bounds.
	maxRecord = 4 << 20
	// maxRecords bounds how many records a start reads.
	maxRecords = 100_000
)

// record is a sandbox as stored: every field of sandbox but its tokens
// (derived) and its state (the session's).
type record struct {
	ID         string            `json:"id"`
	Caller     string            `json:"caller"`
	Template   string            `json:"template"`
	Alias      string            `json:"alias,omitempty"`
	Lang       string            `json:"lang"`
	Image      string            `json:"image,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	Public     bool              `json:"public,omitempty"`
	Started    time.Time         `json:"started"`
	CPUs       float64           `json:"cpus"`
	MemoryMB   int64             `json:"memory_mb"`
	DiskMB     int64             `json:"disk_mb"`
	AllowHosts []string          `json:"allow_hosts,omitempty"`
	Linked     bool              `json:"linked,omitempty"`
	NetBytes   int64             `json:"net_bytes,omitempty"`
	// Auto is its auto-pause timer: nil for one killed at its timeout.
	Auto *autoRecord `json:"auto,omitempty"`
	// Contexts are its code interpreter's, the default one first.
	Contexts []interp.CodeContext `json:"contexts,omitempty"`
}

type autoRecord struct {
	Resume  bool          `json:"resume"`
	Timeout time.Duration `json:"timeout"`
	At      time.Time     `json:"at"`
}

// records keeps sandboxes' records in a directory; nil keeps none (a
// server without Config.Records: its tokens are random, its sandboxes
// its own).
type records struct {
	dir       string
	seal      cipher.AEAD
	tokenKey  []byte
	mu        sync.Mutex
	broken    error
	writeFail func(error)
}

// openRecords opens (making it if need be) the records' directory and
// its secret.
func openRecords(dir string) (*records, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("making E2B's records directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("making E2B's records directory root's: %w", err)
	}
	secret, err := nodeSecret(filepath.Join(dir, secretFile))
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(derive(secret, "record"))
	if err != nil {
		return nil, err
	}
	seal, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &records{dir: dir, seal: seal, tokenKey: derive(secret, "token")}, nil
}

// nodeSecret reads the secret at path, or makes it when there is none.
func nodeSecret(path string) ([]byte, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err == nil {
		_, err = f.Write(secret)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("writing E2B's node secret: %w", err)
		}
		return secret, nil
	}
	if !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("making E2B's node secret: %w", err)
	}
	got, err := readBounded(path, 64)
	if err != nil {
		return nil, fmt.Errorf("reading E2B's node secret: %w", err)
	}
	if len(got) != 32 {
		return nil, fmt.Errorf("E2B's node secret %s is %d bytes, not 32: remove it (every E2B sandbox's tokens change)", path, len(got))
	}
	return got, nil
}

// derive is the key for use under secret.
func derive(secret []byte, use string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("boxer e2b " + use))
	return m.Sum(nil)
}

// tokens are sandbox id's envd and traffic access tokens: random when
// there are no records, else derived from the node's secret.
func (rs *records) tokens(id string) (envd, traffic string) {
	if rs == nil {
		return token(), token()
	}
	one := func(use string) string {
		m := hmac.New(sha256.New, rs.tokenKey)
		m.Write([]byte(use + "\x00" + id))
		return hex.EncodeToString(m.Sum(nil)[:24])
	}
	return one("envd"), one("traffic")
}

func (rs *records) path(id string) string { return filepath.Join(rs.dir, id+recordExt) }

// save writes sb's record, replacing the one before. A failure is said
// (writeFail) but does not fail the call that changed sb: it lives on,
// only a later server would not know it.
func (rs *records) save(sb *sandbox, contexts []interp.CodeContext) {
	if rs == nil || !validID(sb.ID) {
		return
	}
	plain, err := json.Marshal(recordOf(sb, contexts))
	if err == nil {
		err = rs.write(sb.ID, plain)
	}
	if err != nil && rs.writeFail != nil {
		rs.writeFail(fmt.Errorf("keeping sandbox %s's record: %w", sb.ID, err))
	}
}

// recordOf is sb's record, with its code contexts.
func recordOf(sb *sandbox, contexts []interp.CodeContext) record {
	rec := record{
		ID: sb.ID, Caller: sb.Caller, Template: sb.Template, Alias: sb.Alias, Lang: sb.Lang, Image: sb.Image,
		Env: sb.Env, Metadata: sb.Metadata, Public: sb.Public, Started: sb.Started,
		CPUs: sb.CPUs, MemoryMB: sb.MemoryMB, DiskMB: sb.DiskMB,
		AllowHosts: sb.AllowHosts, Linked: sb.Linked, NetBytes: sb.NetBytes, Contexts: contexts,
	}
	if a := sb.auto; a != nil {
		a.mu.Lock()
		rec.Auto = &autoRecord{Resume: a.resume, Timeout: a.timeout, At: a.at}
		a.mu.Unlock()
	}
	return rec
}

// sandboxOf is the sandbox rec records, without its tokens, timer or
// code contexts.
func sandboxOf(rec record) *sandbox {
	return &sandbox{
		ID: rec.ID, Caller: rec.Caller, Template: rec.Template, Alias: rec.Alias, Lang: rec.Lang, Image: rec.Image,
		Env: rec.Env, Metadata: rec.Metadata, Public: rec.Public, Started: rec.Started,
		CPUs: rec.CPUs, MemoryMB: rec.MemoryMB, DiskMB: rec.DiskMB,
		AllowHosts: rec.AllowHosts, Linked: rec.Linked, NetBytes: rec.NetBytes,
	}
}

func (rs *records) write(id string, plain []byte) error {
	nonce := make([]byte, rs.seal.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	sealed := rs.seal.Seal(nonce, nonce, plain, []byte(id))
	rs.mu.Lock()
	defer rs.mu.Unlock()
	tmp := rs.path(id) + ".new"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(sealed)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, rs.path(id))
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// remove forgets id's record.
func (rs *records) remove(id string) {
	if rs == nil || !validID(id) {
		return
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	_ = os.Remove(rs.path(id))
}

// load reads every record back; those it cannot open (another secret's,
// damaged) are removed and said.
func (rs *records) load() (recs []record, bad []error) {
	if rs == nil {
		return nil, nil
	}
	ents, err := os.ReadDir(rs.dir)
	if err != nil {
		return nil, []error{err}
	}
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), recordExt)
		if !ok {
			continue
		}
		if len(recs) >= maxRecords {
			bad = append(bad, fmt.Errorf("more than %d records: the rest are not read", maxRecords))
			break
		}
		rec, err := rs.read(id)
		if err != nil {
			bad = append(bad, fmt.Errorf("sandbox %s's record: %w (removed)", id, err))
			rs.remove(id)
			continue
		}
		recs = append(recs, rec)
	}
	return recs, bad
}

func (rs *records) read(id string) (record, error) {
	var rec record
	if !validID(id) {
		return rec, errors.New("not a sandbox ID")
	}
	sealed, err := readBounded(rs.path(id), maxRecord)
	if err != nil {
		return rec, err
	}
	n := rs.seal.NonceSize()
	if len(sealed) < n {
		return rec, errors.New("too short")
	}
	plain, err := rs.seal.Open(nil, sealed[:n], sealed[n:], []byte(id))
	if err != nil {
		return rec, errors.New("not sealed with this node's secret")
	}
	if err := json.Unmarshal(plain, &rec); err != nil {
		return rec, err
	}
	if rec.ID != id {
		return rec, errors.New("names another sandbox")
	}
	return rec, nil
}

// readBounded reads at most limit bytes of the regular file at path,
// never following a link nor waiting on a FIFO.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is over %d bytes", path, limit)
	}
	return b, nil
}

// validID: id can name a file of the records' directory.
func validID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// restore makes the sandboxes of the records whose sessions live on,
// and forgets the others. An auto-pausing one is armed again with what
// is left of its timeout (paused now when it is past), unless paused.
func (s *Server) restore(ctx context.Context) (int, error) {
	recs, bad := s.records.load()
	for _, err := range bad {
		s.records.writeFail(err)
	}
	if len(recs) == 0 {
		return 0, nil
	}
	sessions, err := s.runner.Sessions(ctx, "")
	if err != nil {
		return 0, fmt.Errorf("listing sessions to take E2B's sandboxes over: %w", err)
	}
	live := map[string]runner.Session{}
	for _, sess := range sessions {
		live[sess.ID] = sess
	}
	n := 0
	for _, rec := range recs {
		sess, ok := live[rec.ID]
		if ok && sess.HeldElsewhere {
			// Another server on this host made it and still runs: its
			// sandbox, not this one's to answer for or time.
			continue
		}
		if !ok || sess.Caller != rec.Caller {
			s.records.remove(rec.ID)
			continue
		}
		sb := sandboxOf(rec)
		sb.EnvdToken, sb.TrafficToken = s.records.tokens(sb.ID)
		sb.paused.Store(sess.Paused)
		s.mu.Lock()
		s.boxes[sb.ID] = sb
		s.mu.Unlock()
		s.interp.Adopt(sb.ID, rec.Contexts)
		if a := rec.Auto; a != nil {
			sb.auto = &autoPause{resume: a.Resume, timeout: a.Timeout, at: a.At}
			if !sess.Paused {
				sb.auto.timer = time.AfterFunc(max(time.Until(a.At), 0), func() { s.pauseAtTimeout(sb) })
			}
		}
		n++
	}
	return n, nil
}

// pruneEvery is how often at most pruneGone looks for sandboxes whose
// session ended by itself (a timeout, its idle time): their records are
// not kept past that.
const pruneEvery = 30 * time.Second

// pruneGone forgets the sandboxes whose sessions have ended, at most once
// every pruneEvery: a session that times out ends without this server,
// and its record would otherwise wait for the next lookup or restart.
func (s *Server) pruneGone(ctx context.Context) {
	if s.records == nil {
		return
	}
	s.mu.Lock()
	if time.Since(s.pruned) < pruneEvery {
		s.mu.Unlock()
		return
	}
	s.pruned = time.Now()
	// Only those known before the list: one made meanwhile is not gone.
	known := make([]string, 0, len(s.boxes))
	for id := range s.boxes {
		known = append(known, id)
	}
	s.mu.Unlock()
	sessions, err := s.runner.Sessions(ctx, "")
	if err != nil {
		return
	}
	live := make(map[string]bool, len(sessions))
	for _, sess := range sessions {
		live[sess.ID] = true
	}
	for _, id := range known {
		if !live[id] {
			s.forget(id)
		}
	}
}
