package secrets

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// maskAll is the reference the streaming Masker must agree with: the whole
// text at once, left to right, the longest pattern at each position.
func maskAll(text string, secrets []Named) string {
	m := NewMasker(nil, secrets)
	var out strings.Builder
	for i := 0; i < len(text); {
		matched := false
		for _, p := range m.patterns { // longest first
			if strings.HasPrefix(text[i:], string(p.value)) {
				out.Write(p.mask)
				i += len(p.value)
				matched = true
				break
			}
		}
		if !matched {
			out.WriteByte(text[i])
			i++
		}
	}
	return out.String()
}

// writeChunks writes text through a new Masker in chunks ending at cuts
// (increasing offsets), flushes, and returns what reached dst.
func writeChunks(t *testing.T, secrets []Named, text string, cuts ...int) string {
	t.Helper()
	var dst bytes.Buffer
	m := NewMasker(&dst, secrets)
	prev := 0
	for _, c := range append(cuts, len(text)) {
		n, err := m.Write([]byte(text[prev:c]))
		if err != nil || n != c-prev {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil", text[prev:c], n, err, c-prev)
		}
		prev = c
	}
	if err := m.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	return dst.String()
}

var threeSecrets = []Named{
	{"API_KEY", []byte("sk-live-4242")},
	{"DB_PASS", []byte("hunter2\n")},
	{"TOKEN", []byte("ghp_abcdef")},
}

const threeText = "key=sk-live-4242 pass=hunter2\nghp_abcdefghp_abcdef sk-live-424 hunter sk-live-4242"

func TestMaskerSingleWrite(t *testing.T) {
	tests := []struct {
		name    string
		secrets []Named
		in      string
		want    string
	}{
		{name: "three secrets", secrets: threeSecrets, in: threeText,
			want: "key=[secret:API_KEY] pass=[secret:DB_PASS]\n[secret:TOKEN][secret:TOKEN] sk-live-424 hunter [secret:API_KEY]"},
		{name: "prefix secrets, long one", secrets: []Named{{"SHORT", []byte("abc")}, {"LONG", []byte("abcdef")}},
			in: "xabcdefy", want: "x[secret:LONG]y"},
		{name: "prefix secrets, short one", secrets: []Named{{"SHORT", []byte("abc")}, {"LONG", []byte("abcdef")}},
			in: "xabcdey", want: "x[secret:SHORT]dey"},
		{name: "prefix secret at the end", secrets: []Named{{"SHORT", []byte("ab")}, {"LONG", []byte("abcd")}},
			in: "xabc", want: "x[secret:SHORT]c"},
		{name: "non-overlapping", secrets: []Named{{"S", []byte("abab")}},
			in: "ababab", want: "[secret:S]ab"},
		{name: "overlapping secrets", secrets: []Named{{"A", []byte("abc")}, {"B", []byte("cde")}},
			in: "abcde", want: "[secret:A]de"},
		{name: "trailing newline trimmed", secrets: []Named{{"F", []byte("tok\r\n\n")}},
			in: "tok\ntok\r\n", want: "[secret:F]\n[secret:F]\r\n"},
		{name: "only line ends", secrets: []Named{{"NL", []byte("\n\r\n")}},
			in: "a\nb\r\n", want: "a\nb\r\n"},
		{name: "same value", secrets: []Named{{"B", []byte("v1")}, {"A", []byte("v1")}},
			in: "v1", want: "[secret:A]"},
		{name: "one-byte secret", secrets: []Named{{"X", []byte("x")}},
			in: "axbx", want: "a[secret:X]b[secret:X]"},
		{name: "binary", secrets: []Named{{"BIN", []byte("\x00\xff\x00")}},
			in: "\x00\x00\xff\x00\xff", want: "\x00[secret:BIN]\xff"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := writeChunks(t, tc.secrets, tc.in); got != tc.want {
				t.Errorf("masked = %q, want %q", got, tc.want)
			}
			if got := maskAll(tc.in, tc.secrets); got != tc.want {
				t.Errorf("reference masked = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMaskerSplitWrites(t *testing.T) {
	sets := map[string]struct {
		secrets []Named
		text    string
	}{
		"three":    {threeSecrets, threeText},
		"prefixes": {[]Named{{"S", []byte("ab")}, {"M", []byte("abcd")}, {"L", []byte("abcdabce")}}, "abcdabcdabceabcabab abcdabc"},
		"repeats":  {[]Named{{"S", []byte("aab")}}, "aaaabaaabaa"},
	}
	for name, set := range sets {
		t.Run(name, func(t *testing.T) {
			want := maskAll(set.text, set.secrets)
			n := len(set.text)
			for i := 0; i <= n; i++ {
				if got := writeChunks(t, set.secrets, set.text, i); got != want {
					t.Fatalf("split at %d: masked = %q, want %q", i, got, want)
				}
				for j := i; j <= n; j++ {
					if got := writeChunks(t, set.secrets, set.text, i, j); got != want {
						t.Fatalf("split at %d and %d: masked = %q, want %q", i, j, got, want)
					}
				}
			}
			bytewise := make([]int, n)
			for i := range bytewise {
				bytewise[i] = i
			}
			if got := writeChunks(t, set.secrets, set.text, bytewise...); got != want {
				t.Errorf("one byte a write: masked = %q, want %q", got, want)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for range 200 {
				var cuts []int
				for c := rng.IntN(4); c < n; c += 1 + rng.IntN(5) {
					cuts = append(cuts, c)
				}
				if got := writeChunks(t, set.secrets, set.text, cuts...); got != want {
					t.Fatalf("cuts %v: masked = %q, want %q", cuts, got, want)
				}
			}
		})
	}
}

func TestMaskerHoldsBackOnlyAPrefix(t *testing.T) {
	var dst bytes.Buffer
	m := NewMasker(&dst, []Named{{"K", []byte("secret123")}})
	steps := []struct {
		write string
		want  string // all that reached dst so far
	}{
		{write: "hello sec", want: "hello "},
		{write: "ret", want: "hello "},
		{write: "12", want: "hello "},
		{write: "4 s", want: "hello secret124 "},
		{write: "ecret123", want: "hello secret124 [secret:K]"},
		{write: "xx secr", want: "hello secret124 [secret:K]xx "},
	}
	for _, s := range steps {
		if _, err := m.Write([]byte(s.write)); err != nil {
			t.Fatalf("Write: %v", err)
		}
		if dst.String() != s.want {
			t.Fatalf("after Write(%q): dst = %q, want %q", s.write, dst.String(), s.want)
		}
		if len(m.held) > len("secret123")-1 {
			t.Errorf("after Write(%q): holds %d bytes, want at most %d", s.write, len(m.held), len("secret123")-1)
		}
	}
	if err := m.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if want := "hello secret124 [secret:K]xx secr"; dst.String() != want {
		t.Errorf("after Flush: dst = %q, want %q (a partial value at the end passes unmasked)", dst.String(), want)
	}
}

// countingWriter records each Write it gets.
type countingWriter struct{ writes [][]byte }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, p)
	return len(p), nil
}

func TestMaskerNoSecretsPassesThrough(t *testing.T) {
	for _, secrets := range [][]Named{nil, {{"NL", []byte("\n")}}} {
		dst := &countingWriter{}
		m := NewMasker(dst, secrets)
		p := []byte("anything at all\n")
		if n, err := m.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(p))
		}
		if len(dst.writes) != 1 || &dst.writes[0][0] != &p[0] {
			t.Errorf("dst got %q, want the caller's slice itself in one write", dst.writes)
		}
		if err := m.Flush(); err != nil || len(dst.writes) != 1 {
			t.Errorf("Flush = %v with %d writes, want nil and nothing written", err, len(dst.writes))
		}
	}
}

func TestMaskerUnrelatedBytesNotCopied(t *testing.T) {
	dst := &countingWriter{}
	m := NewMasker(dst, threeSecrets)
	p := []byte("no secret here\n")
	if _, err := m.Write(p); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if len(dst.writes) != 1 || &dst.writes[0][0] != &p[0] || len(dst.writes[0]) != len(p) {
		t.Errorf("dst got %q, want the caller's slice itself in one write", dst.writes)
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write(p []byte) (int, error) { return 0, errors.New("disk full") }

func TestMaskerDstError(t *testing.T) {
	m := NewMasker(failingWriter{}, threeSecrets)
	if n, err := m.Write([]byte("out sk-live-4242 and more")); err == nil || n != 0 {
		t.Errorf("Write = %d, %v; want 0 and dst's error", n, err)
	}
	if _, err := m.Write([]byte("more")); err == nil {
		t.Errorf("Write after a failure = nil error, want dst's error again")
	}
	if err := m.Flush(); err == nil {
		t.Errorf("Flush after a failure = nil error, want dst's error again")
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes, so that the race
// detector sees the Masker's own locking, not the test's.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func TestMaskerConcurrentWrites(t *testing.T) {
	dst := &syncBuffer{}
	m := NewMasker(dst, threeSecrets)
	const writers, lines = 8, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range lines {
				fmt.Fprintf(m, "writer %d line %d key sk-live-4242 token ghp_abcdef\n", w, i)
			}
		})
	}
	wg.Wait()
	if err := m.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	out := dst.buf.String()
	for _, s := range threeSecrets {
		if v := strings.TrimRight(string(s.Value), "\n"); strings.Contains(out, v) {
			t.Errorf("output holds the value of %s", s.Name)
		}
	}
	for _, mask := range []string{"[secret:API_KEY]", "[secret:TOKEN]"} {
		if got := strings.Count(out, mask); got != writers*lines {
			t.Errorf("%s appears %d times, want %d", mask, got, writers*lines)
		}
	}
}

func BenchmarkMasker(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	words := []string{"the", "sandbox", "printed", "sk-", "ghp_", "hunt", "line\n", "value=", "ok", "42"}
	var text []byte
	for len(text) < 1<<20 {
		if rng.IntN(500) == 0 {
			text = append(text, threeSecrets[rng.IntN(3)].Value...)
		}
		text = append(text, words[rng.IntN(len(words))]...)
		text = append(text, ' ')
	}
	text = text[:1<<20]
	const chunk = 32 << 10
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		m := NewMasker(io.Discard, threeSecrets)
		for i := 0; i < len(text); i += chunk {
			if _, err := m.Write(text[i:min(i+chunk, len(text))]); err != nil {
				b.Fatal(err)
			}
		}
		if err := m.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}
