package runner

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/boxer-dev/boxer/runner/contract"
)

// lines splits a fuzzed list, one entry a line; "" is no list at all.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// checkFieldError fails unless err is a *FieldError that names its field
// and says something.
func checkFieldError(t *testing.T, what string, err error) {
	t.Helper()
	var fe *contract.FieldError
	if !errors.As(err, &fe) || !errors.Is(err, contract.ErrInvalid) {
		t.Fatalf("%s = %v (%T), want a *FieldError", what, err, err)
	}
	if fe.Field == "" || fe.Message == "" {
		t.Fatalf("%s = %+v: a FieldError names its field and says why", what, fe)
	}
}

// FuzzNormalize feeds Normalize and NormalizeWithin what a caller types:
// limits as text (parsed as the CLI and the server parse them), env, user,
// hosts, secrets, globs and file names. Every refusal is a *FieldError, and
// a request once normalized normalizes to itself.
func FuzzNormalize(f *testing.F) {
	type seed struct {
		lang, image, command    string
		code                    []byte
		env, timeout, memory    string
		cpus                    float64
		pids                    int64
		tmpSize, output, user   string
		runtime, hosts, secrets string
		returnFiles, files      string
		within                  bool
		maxTimeout, maxMemory   string
		maxCPUs                 float64
		operator                string
	}
	for _, s := range []seed{
		{lang: "python", code: []byte("print(1)")},
		{image: "boxer/bash", command: "sh\n-c\necho hi", env: "A=1\nB_2=x=y", user: "0:0", runtime: "runsc"},
		{lang: "python", timeout: "1m30s", memory: "512m", cpus: 2, pids: 128, tmpSize: "1g", output: "64k", user: "1000"},
		{lang: "python", timeout: "0s", memory: "1k", cpus: 0.001, pids: -1},
		{lang: "bash", env: "=1\n1A=2\nNOEQ", user: "root:4294967296"},
		{lang: "python", hosts: "example.com\n*.pypi.org:80,443\n10.0.0.0/8", within: true, operator: "*.org\nexample.com\n10.0.0.0/8:1-65535"},
		{lang: "python", hosts: "example.com", within: true},
		{lang: "python", secrets: "TOKEN\nKEY,env\nTOKEN", returnFiles: "*.png\nout/*.csv\n[", files: "a.txt\n../x\n/etc/passwd"},
		{lang: "python", within: true, maxTimeout: "10s", maxMemory: "128m", maxCPUs: 0.5, timeout: "1m", cpus: 2},
		{lang: "cobol", runtime: "kata"},
		{lang: "python", cpus: 1e300, memory: "9223372036854775807"},
		{lang: "python", cpus: math.NaN()},
		{lang: "python", cpus: math.Inf(1), within: true, maxCPUs: 4},
		{},
	} {
		f.Add(s.lang, s.image, s.command, s.code, s.env, s.timeout, s.memory, s.cpus, s.pids, s.tmpSize, s.output, s.user,
			s.runtime, s.hosts, s.secrets, s.returnFiles, s.files, s.within, s.maxTimeout, s.maxMemory, s.maxCPUs, s.operator)
	}
	f.Fuzz(func(t *testing.T, lang, image, command string, code []byte, env, timeout, memory string, cpus float64, pids int64,
		tmpSize, output, user, runtime, hosts, secrets, returnFiles, files string, within bool,
		maxTimeout, maxMemory string, maxCPUs float64, operator string) {
		req := contract.Request{
			Lang: lang, Image: image, Args: lines(command), Code: code, Env: lines(env),
			CPUs: cpus, Pids: pids, Runtime: runtime, AllowHosts: lines(hosts), Secrets: lines(secrets),
			ReturnFiles: lines(returnFiles),
		}
		var err error
		if timeout != "" {
			if req.Timeout, err = contract.ParseTimeout(timeout); err != nil {
				checkFieldError(t, "ParseTimeout", err)
				return
			}
		}
		for _, s := range []struct {
			field, value string
			dst          *int64
		}{{contract.FieldMemory, memory, &req.MemoryBytes}, {contract.FieldTmpSize, tmpSize, &req.TmpBytes}, {contract.FieldOutputLimit, output, &req.OutputLimit}} {
			if s.value == "" {
				continue
			}
			if *s.dst, err = contract.ParseSizeLimit(s.field, s.value); err != nil {
				checkFieldError(t, "ParseSizeLimit", err)
				return
			}
		}
		if user != "" {
			if req.UID, req.GID, err = contract.ParseUser(user); err != nil {
				checkFieldError(t, "ParseUser", err)
				return
			}
			req.UserSet = true
		}
		for _, name := range lines(files) {
			if req.Files == nil {
				req.Files = map[string][]byte{}
			}
			req.Files[name] = []byte(name)
		}

		normalize := contract.Request.Normalize
		if within {
			// The operator's side is configuration, checked when the
			// server starts: only well-formed maxima are of interest.
			max := contract.Maxima{CPUs: maxCPUs, AllowHosts: lines(operator)}
			if maxTimeout != "" {
				if max.Timeout, err = contract.ParseTimeout(maxTimeout); err != nil {
					return
				}
			}
			if maxMemory != "" {
				if max.MemoryBytes, err = contract.ParseSizeLimit(contract.FieldMemory, maxMemory); err != nil {
					return
				}
			}
			if _, err := (contract.Request{AllowHosts: max.AllowHosts, NetBytes: 1, Lang: "bash"}).Normalize(); err != nil {
				return
			}
			normalize = func(r contract.Request) (contract.Request, error) { return r.NormalizeWithin(max) }
		}
		got, err := normalize(req)
		if err != nil {
			checkFieldError(t, "Normalize", err)
			return
		}
		again, err := got.Normalize()
		if err != nil {
			t.Fatalf("normalizing a normalized request: %v", err)
		}
		if !reflect.DeepEqual(again, got) {
			t.Fatalf("normalizing twice changed the request:\n%+v\n%+v", got, again)
		}
		if again, err = normalize(got); err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("normalizing within the maxima twice: %+v, %v", again, err)
		}
		if got.Timeout <= 0 || got.MemoryBytes < 6<<20 || !(got.CPUs >= 0.01) || got.Pids < 1 || got.TmpBytes < 1 || got.OutputLimit < 1 || !got.UserSet {
			t.Fatalf("a normalized request out of bounds: %+v", got)
		}
	})
}

// FuzzCapped writes chunks to the output cap writer: it takes every byte
// (the program never blocks), keeps exactly the first limit bytes and
// passes those same bytes on, says truncated exactly when something was
// dropped, and its text is valid UTF-8 that reads as the kept bytes.
func FuzzCapped(f *testing.F) {
	f.Add(int64(10), []byte("hello world, and more"), uint8(6))
	f.Add(int64(4), []byte("h\xc3\xa9llo"), uint8(2))
	f.Add(int64(3), []byte("\xe2\x82\xac\xff\xfe"), uint8(1))
	f.Add(int64(0), []byte("anything"), uint8(3))
	f.Add(int64(-1), []byte("x"), uint8(0))
	f.Add(int64(1<<20), []byte{}, uint8(5))
	f.Add(int64(5), []byte("12345"), uint8(5))
	f.Fuzz(func(t *testing.T, limit int64, data []byte, chunk uint8) {
		var tee bytes.Buffer
		c := contract.NewCapped(limit, &tee)
		step := max(int(chunk), 1)
		for rest := data; len(rest) > 0; {
			p := rest[:min(step, len(rest))]
			rest = rest[len(p):]
			if n, err := c.Write(p); n != len(p) || err != nil {
				t.Fatalf("Write(%d bytes) = %d, %v: it must take everything", len(p), n, err)
			}
		}
		keep := min(int64(len(data)), max(limit, 0))
		text, truncated := c.Text()
		if got := c.Buf.Bytes(); !bytes.Equal(got, data[:keep]) {
			t.Fatalf("kept %q, want the first %d bytes %q", got, keep, data[:keep])
		}
		if !bytes.Equal(tee.Bytes(), data[:keep]) {
			t.Fatalf("passed on %q, want %q", tee.Bytes(), data[:keep])
		}
		if want := int64(len(data)) > keep; truncated != want {
			t.Fatalf("truncated = %v, want %v (limit %d, wrote %d)", truncated, want, limit, len(data))
		}
		if !utf8.ValidString(text) {
			t.Fatalf("text %q is not valid UTF-8", text)
		}
		if text != contract.ValidUTF8(data[:keep]) || utf8.Valid(data[:keep]) && text != string(data[:keep]) {
			t.Fatalf("text %q does not read as the kept bytes %q", text, data[:keep])
		}
		// One U+FFFD per invalid byte, as Python's errors="replace".
		if utf8.RuneCountInString(text) != utf8.RuneCount(data[:keep]) {
			t.Fatalf("text %q has %d runes, the kept bytes %d", text, utf8.RuneCountInString(text), utf8.RuneCount(data[:keep]))
		}
	})
}
