package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/boxer-dev/boxer/runner"
)

// joinText feeds pieces to a utf8Text and returns what it gave, piece by
// piece, the rest last.
func joinText(t *testing.T, pieces [][]byte) []string {
	t.Helper()
	var u utf8Text
	var out []string
	for _, p := range pieces {
		out = append(out, u.next(p))
	}
	return append(out, u.rest())
}

func TestUTF8TextSplits(t *testing.T) {
	tests := []struct {
		name   string
		pieces []string
		want   []string
	}{
		{"ascii", []string{"ab", "c"}, []string{"ab", "c", ""}},
		{"two bytes cut", []string{"a\xc3", "\xa9b"}, []string{"a", "éb", ""}},
		{"three bytes cut twice", []string{"\xe2", "\x82", "\xac!"}, []string{"", "", "€!", ""}},
		{"four bytes cut", []string{"x\xf0\x9f\x98", "\x80"}, []string{"x", "😀", ""}},
		{"incomplete at the end", []string{"ok\xe2\x82"}, []string{"ok", "\uFFFD\uFFFD"}},
		{"invalid bytes", []string{"a\xff\xfeb"}, []string{"a\uFFFD\uFFFDb", ""}},
		{"lead byte then ascii", []string{"\xe2", "a"}, []string{"", "\uFFFDa", ""}},
		{"stray continuation", []string{"\x80\x80\x80"}, []string{"\uFFFD\uFFFD\uFFFD", ""}},
		{"overlong lead", []string{"\xc0", "\x80"}, []string{"\uFFFD", "\uFFFD", ""}},
		{"surrogate", []string{"\xed\xa0", "\x80"}, []string{"\uFFFD\uFFFD", "\uFFFD", ""}},
		{"empty piece", []string{"\xc3", "", "\xa9"}, []string{"", "", "é", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var pieces [][]byte
			for _, p := range tc.pieces {
				pieces = append(pieces, []byte(p))
			}
			got := joinText(t, pieces)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("texts = %q, want %q", got, tc.want)
			}
			if all := strings.Join(got, ""); all != runner.ValidUTF8([]byte(strings.Join(tc.pieces, ""))) {
				t.Errorf("joined = %q, want validText of the whole %q", all, runner.ValidUTF8([]byte(strings.Join(tc.pieces, ""))))
			}
		})
	}
}

// TestUTF8TextAnyCut cuts random bytes, mostly UTF-8, anywhere: every
// text is valid and they join to validText of the whole.
func TestUTF8TextAnyCut(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "\n", "é", "€", "😀", "\xff", "\x80", "\xe2\x82", "\xf0\x9f", "\xc3"}
	for i := 0; i < 2000; i++ {
		var whole []byte
		for n := rng.IntN(20); n > 0; n-- {
			whole = append(whole, alphabet[rng.IntN(len(alphabet))]...)
		}
		var pieces [][]byte
		for rest := whole; len(rest) > 0; {
			n := rng.IntN(min(len(rest), 5) + 1)
			pieces, rest = append(pieces, rest[:n]), rest[n:]
		}
		got := joinText(t, pieces)
		for _, s := range got {
			if !utf8.ValidString(s) {
				t.Fatalf("%q cut %q: text %q is not UTF-8", whole, pieces, s)
			}
		}
		if all, want := strings.Join(got, ""), runner.ValidUTF8(whole); all != want {
			t.Fatalf("%q cut %q: joined %q, want %q", whole, pieces, all, want)
		}
	}
}

// readStream parses an NDJSON answer: its events, and its last line.
func readStream(t *testing.T, body []byte) (events []StreamEvent, last map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	var lines [][]byte
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	if len(lines) == 0 {
		t.Fatal("no lines")
	}
	for _, l := range lines[:len(lines)-1] {
		var e StreamEvent
		dec := json.NewDecoder(bytes.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("line %s: %v", l, err)
		}
		if !utf8.ValidString(e.Data) || e.Data == "" || (e.Stream != "stdout" && e.Stream != "stderr") {
			t.Errorf("event %+v", e)
		}
		events = append(events, e)
	}
	if err := json.Unmarshal(lines[len(lines)-1], &last); err != nil {
		t.Fatalf("last line %s: %v", lines[len(lines)-1], err)
	}
	return events, last
}

func joined(events []StreamEvent, stream string) string {
	var b strings.Builder
	for _, e := range events {
		if e.Stream == stream {
			b.WriteString(e.Data)
		}
	}
	return b.String()
}

// TestNDJSONStream writes both streams at once, in pieces that cut
// characters, as the runner's two copy goroutines do: every line is
// whole, and each stream's data joins to its text in the result.
func TestNDJSONStream(t *testing.T) {
	rec := httptest.NewRecorder()
	s := newNDJSONStream(rec)
	var want [2][]byte
	var wg sync.WaitGroup
	for stream := range want {
		piece := []byte("é€😀 line\n\xff")
		for i := 0; i < 200; i++ {
			want[stream] = append(want[stream], piece...)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := s.writer(stream)
			rng := rand.New(rand.NewPCG(uint64(stream), 7))
			for rest := want[stream]; len(rest) > 0; {
				n := min(len(rest), 1+rng.IntN(9))
				if _, err := w.Write(rest[:n]); err != nil {
					t.Errorf("write: %v", err)
				}
				rest = rest[n:]
			}
		}()
	}
	wg.Wait()
	res := runner.Result{ID: "bx-1", Status: runner.StatusExited, Stdout: runner.ValidUTF8(want[stdout]), Stderr: runner.ValidUTF8(want[stderr])}
	s.finish(res)
	_, _ = s.writer(stdout).Write([]byte("too late\n"))

	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/x-ndjson" {
		t.Errorf("answer %d %q, want 200 application/x-ndjson", rec.Code, rec.Header().Get("Content-Type"))
	}
	events, last := readStream(t, rec.Body.Bytes())
	for stream, name := range streamNames {
		if got := joined(events, name); got != runner.ValidUTF8(want[stream]) {
			t.Errorf("%s joined = %q, want %q", name, got, runner.ValidUTF8(want[stream]))
		}
	}
	if _, ok := last["stream"]; ok || last["id"] != "bx-1" || last["stdout"] != res.Stdout {
		t.Errorf("last line %v, want the result", last)
	}
	var plain bytes.Buffer
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(res)
	if !bytes.HasSuffix(rec.Body.Bytes(), plain.Bytes()) {
		t.Errorf("last line differs from the JSON answer's body %s", plain.Bytes())
	}
}

// TestNDJSONStreamHeldAtEnd: an incomplete character held when the run
// ends goes out, replaced, before the result.
func TestNDJSONStreamHeldAtEnd(t *testing.T) {
	rec := httptest.NewRecorder()
	s := newNDJSONStream(rec)
	_, _ = s.writer(stderr).Write([]byte("<b>\xe2\x82"))
	s.finish(runner.Result{ID: "bx-2", Stderr: runner.ValidUTF8([]byte("<b>\xe2\x82"))})
	events, last := readStream(t, rec.Body.Bytes())
	want := []StreamEvent{{"stderr", "<b>"}, {"stderr", "\uFFFD\uFFFD"}}
	if len(events) != len(want) || events[0] != want[0] || events[1] != want[1] {
		t.Errorf("events = %+v, want %+v", events, want)
	}
	if last["stderr"] != "<b>\uFFFD\uFFFD" {
		t.Errorf("last line %v", last)
	}
	if !strings.Contains(rec.Body.String(), `"<b>"`) {
		t.Errorf("HTML escaped: %s", rec.Body)
	}
}

// failingWriter fails every write after the first ok ones.
type failingWriter struct {
	header http.Header
	ok     int
	writes int
}

func (f *failingWriter) Header() http.Header { return f.header }
func (f *failingWriter) WriteHeader(int)     {}
func (f *failingWriter) Write(p []byte) (int, error) {
	f.writes++
	if f.writes > f.ok {
		return 0, errors.New("broken pipe")
	}
	return len(p), nil
}

// TestNDJSONStreamDropsAfterError: once a write fails, nothing more is
// tried, and the writers the runner holds still take everything.
func TestNDJSONStreamDropsAfterError(t *testing.T) {
	f := &failingWriter{header: http.Header{}, ok: 1}
	s := newNDJSONStream(f)
	w := s.writer(stdout)
	for i := 0; i < 10; i++ {
		if n, err := w.Write([]byte("x\n")); n != 2 || err != nil {
			t.Fatalf("write %d: %d, %v, want 2, nil", i, n, err)
		}
	}
	s.finish(runner.Result{ID: "bx-3"})
	if f.writes != 2 {
		t.Errorf("%d writes to the response, want 2 (one ok, one failed, then none)", f.writes)
	}
	if !s.started() {
		t.Error("status line not marked as sent")
	}
}

func TestWantsStream(t *testing.T) {
	tests := []struct {
		name   string
		accept []string
		want   bool
	}{
		{"none", nil, false},
		{"json", []string{"application/json"}, false},
		{"any", []string{"*/*"}, false},
		{"ndjson", []string{"application/x-ndjson"}, true},
		{"case", []string{"Application/X-NDJSON"}, true},
		{"in a list", []string{"application/json;q=0.5, application/x-ndjson"}, true},
		{"second header", []string{"application/json", "application/x-ndjson"}, true},
		{"refused", []string{"application/x-ndjson;q=0"}, false},
		{"weighted", []string{"application/x-ndjson; q=0.9"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/runs", nil)
			for _, a := range tc.accept {
				r.Header.Add("Accept", a)
			}
			if got := wantsStream(r); got != tc.want {
				t.Errorf("wantsStream(%q) = %v, want %v", tc.accept, got, tc.want)
			}
		})
	}
}

// TestStreamRefusedAnswersAsUsual: a request refused before it runs is
// answered with its status and the JSON error, whatever it accepts.
func TestStreamRefusedAnswersAsUsual(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		body  string
		code  int
		field string
	}{
		{"bad field", Config{}, `{"lang":"python","code":"1","memory":"1k"}`, http.StatusBadRequest, "memory"},
		{"not json", Config{}, `lang=python`, http.StatusBadRequest, "body"},
		{"too big", Config{MaxBody: 16}, `{"lang":"python","code":"print(1)"}`, http.StatusRequestEntityTooLarge, "body"},
		{"forbidden", Config{}, `{"lang":"python","code":"1","allow_hosts":["example.com"]}`, http.StatusForbidden, "allow_hosts"},
		{"no token", Config{Token: "a-token-of-some-length"}, `{"lang":"python","code":"1"}`, http.StatusUnauthorized, "authorization"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := New(nil, tc.cfg).Handler()
			var answers [2]*httptest.ResponseRecorder
			for i, accept := range []string{"", "application/x-ndjson"} {
				r := httptest.NewRequest("POST", "/v1/runs", strings.NewReader(tc.body))
				if accept != "" {
					r.Header.Set("Accept", accept)
				}
				answers[i] = httptest.NewRecorder()
				h.ServeHTTP(answers[i], r)
			}
			plain, streamed := answers[0], answers[1]
			var e APIError
			if streamed.Code != tc.code || streamed.Header().Get("Content-Type") != "application/json" || json.Unmarshal(streamed.Body.Bytes(), &e) != nil || e.Field != tc.field {
				t.Errorf("streamed: %d %q %s, want %d application/json naming %s", streamed.Code, streamed.Header().Get("Content-Type"), streamed.Body, tc.code, tc.field)
			}
			if streamed.Code != plain.Code || streamed.Body.String() != plain.Body.String() || streamed.Header().Get("Content-Length") != plain.Header().Get("Content-Length") {
				t.Errorf("streamed %d %s, plain %d %s: want the same answer", streamed.Code, streamed.Body, plain.Code, plain.Body)
			}
		})
	}
}
