package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/boxer-dev/boxer/audit"
	"github.com/boxer-dev/boxer/runner"
)

// fuzzMax is the operator's side of the fuzzed requests: every maximum set,
// and an allowlist a request may narrow.
var fuzzMax = runner.Maxima{
	Timeout: 60e9, MemoryBytes: 512 << 20, CPUs: 2, Pids: 100, TmpBytes: 128 << 20, OutputLimit: 4 << 20,
	NetBytes: 50 << 20, ReturnBytes: 1 << 20, AllowHosts: []string{"*.python.org", "pypi.org", "example.com:80,443", "10.0.0.0/8"},
}

// jsonNames lists the JSON names of t's fields, embedded structs' included.
func jsonNames(t reflect.Type) map[string]bool {
	names := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			for n := range jsonNames(f.Type) {
				names[n] = true
			}
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		names[name] = true
	}
	return names
}

// checkRefusal fails unless err is a *runner.FieldError naming one of the
// fields the caller sent, which is how both APIs answer it.
func checkRefusal(t *testing.T, err error, fields map[string]bool) {
	t.Helper()
	var fe *runner.FieldError
	if !errors.As(err, &fe) || !errors.Is(err, runner.ErrInvalid) {
		t.Fatalf("Request = %v (%T), want a *runner.FieldError", err, err)
	}
	if !fields[fe.Field] || fe.Message == "" {
		t.Fatalf("Request = %+v: the field at fault must be one the caller can send", fe)
	}
	if ae := apiError(err); ae.Field != fe.Field || ae.Message == "" {
		t.Fatalf("answered as %+v for %+v", ae, fe)
	}
}

// FuzzRunBody posts arbitrary bodies to POST /v1/runs, through the real
// handler (a full queue answers what would run with 429, so no sandbox is
// needed): every answer is 4xx with the one error shape, an audit line
// records it, and a body the handler refuses after decoding is refused by
// RunRequest.Request with a *runner.FieldError on a field of the body.
func FuzzRunBody(f *testing.F) {
	for _, seed := range []string{
		`{"lang":"python","code":"print(1)"}`,
		`{"image":"boxer/bash","command":["sh","-c","env"],"env":{"A":"1","1B":"x"},"user":"1000:1000"}`,
		`{"lang":"python","code":"1","timeout":"10s","memory":"256m","cpus":0.5,"pids":10,"tmp_size":"16m","output_limit":"64k"}`,
		`{"lang":"python","cpus":0,"pids":0}`,
		`{"lang":"python","cpus":1e400}`,
		`{"lang":"python","memory":"99999999999999999999g","timeout":"-1s"}`,
		`{"lang":"python","user":"4294967295"}`,
		`{"lang":"python","allow_hosts":["pypi.org","docs.python.org","10.1.2.3:80"],"net_bytes":"1m"}`,
		`{"lang":"python","allow_hosts":["evil.com"]}`,
		`{"lang":"python","files":{"a.txt":"x","../b":"y"},"files_base64":{"a.txt":"eA=="}}`,
		`{"lang":"python","files_base64":{"c.bin":"not base64"},"return_files":["*.png","["]}`,
		`{"lang":"python","secrets":["TOKEN","TOKEN,env"]}`,
		`{"lang":"python","network":"host","runtime":"kata"}`,
		`{"lang":"python","unknown":1}`,
		`{"lang":"python","Input":{"code":"1"}}`,
		`{"lang":"python"} {"lang":"python"}`,
		`[]`, `null`, `{`, ``, `"lang"`,
		`{"lang":"python","code":"` + strings.Repeat("x", 5000) + `"}`,
	} {
		f.Add([]byte(seed), false)
	}
	f.Add([]byte(`{"lang":"python","code":"print(1)"}`), true)
	fields := jsonNames(reflect.TypeFor[RunRequest]())
	f.Fuzz(func(t *testing.T, body []byte, stream bool) {
		var auditBuf bytes.Buffer
		s := New(nil, Config{Concurrency: 1, Queue: 0, MaxBody: 4096, Audit: audit.New(&auditBuf), Max: fuzzMax})
		s.slots <- struct{}{} // the one slot is taken: nothing runs
		req := httptest.NewRequest("POST", "/v1/runs", bytes.NewReader(body))
		if stream {
			req.Header.Set("Accept", ndjsonType)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)

		var ae APIError
		dec := json.NewDecoder(rec.Body)
		dec.DisallowUnknownFields()
		// Only the full queue's 429 is no field's.
		if err := dec.Decode(&ae); err != nil || (ae.Field == "") != (rec.Code == http.StatusTooManyRequests) || ae.Message == "" {
			t.Fatalf("answer %d %+v: want the one error shape (%v)", rec.Code, ae, err)
		}
		var line audit.Entry
		if err := json.Unmarshal(auditBuf.Bytes(), &line); err != nil || line.HTTPStatus != rec.Code || line.Error != ae.Error() {
			t.Fatalf("audit line %q for %d %+v (%v)", auditBuf.Bytes(), rec.Code, ae, err)
		}

		// The handler's own decoding, to learn what it made of the body.
		var rr RunRequest
		var in io.Reader = bytes.NewReader(body)
		if len(body) > 4096 {
			in = io.MultiReader(bytes.NewReader(body[:4096]), iotest.ErrReader(errors.New("too large")))
		}
		d := json.NewDecoder(in)
		d.DisallowUnknownFields()
		decoded := d.Decode(&rr) == nil && !d.More()
		switch rec.Code {
		case http.StatusRequestEntityTooLarge:
			if len(body) <= 4096 {
				t.Fatalf("413 for %d bytes, under the maximum", len(body))
			}
		case http.StatusTooManyRequests:
			if !decoded {
				t.Fatalf("a body that does not decode was admitted: %q", body)
			}
			if _, err := rr.Request(fuzzMax); err != nil {
				t.Fatalf("admitted a request Request refuses: %v", err)
			}
		case http.StatusBadRequest, http.StatusForbidden:
			if !decoded {
				// An unknown field is named as it was sent.
				if ae.Field != "body" && ae.Message != "unknown field" && !fields[strings.SplitN(ae.Field, ".", 2)[0]] {
					t.Fatalf("decoding error names %q, not a field of the body", ae.Field)
				}
				return
			}
			_, err := rr.Request(fuzzMax)
			checkRefusal(t, err, fields)
			if got := requestStatus(err); got != rec.Code {
				t.Fatalf("answered %d, Request's error is a %d", rec.Code, got)
			}
		default:
			t.Fatalf("answered %d %q: want 400, 403, 413 or 429", rec.Code, rec.Body)
		}
	})
}

// FuzzMCPArguments gives run_code arbitrary arguments the way the MCP SDK
// does (validated against the tool's schema, then unmarshaled): the
// request is made or refused with a *runner.FieldError on an argument of
// the tool.
func FuzzMCPArguments(f *testing.F) {
	for _, seed := range []string{
		`{"lang":"python","code":"print(1)"}`,
		`{"lang":"bash","code":"echo hi","stdin":"in","files":{"a/b.txt":"x"},"return_files":["*.txt"]}`,
		`{"lang":"python","timeout":"5s","memory":"128m","cpus":1,"pids":32,"tmp_size":"8m","output_limit":"1k","runtime":"runsc"}`,
		`{"lang":"python","cpus":0}`,
		`{"lang":"python","cpus":-1,"pids":-5}`,
		`{"lang":"python","allow_hosts":["files.pythonhosted.org"],"net_bytes":"5m"}`,
		`{"lang":"python","allow_hosts":["*"]}`,
		`{"lang":"python","files_base64":{"x":"@@"}}`,
		`{"lang":"cobol"}`,
		`{"lang":""}`,
		`{"code":"print(1)"}`,
		`{"lang":"python","image":"alpine"}`,
		`{}`, `null`, `[]`, `{"lang":1}`,
	} {
		f.Add([]byte(seed))
	}
	schema, err := runCodeSchema()
	if err != nil {
		f.Fatal(err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		f.Fatal(err)
	}
	fields := jsonNames(reflect.TypeFor[RunCodeInput]())
	f.Fuzz(func(t *testing.T, args []byte) {
		// The SDK refuses what does not match the schema before the
		// handler sees it.
		var m map[string]any
		if json.Unmarshal(args, &m) != nil || resolved.Validate(m) != nil {
			return
		}
		var in RunCodeInput
		if err := json.Unmarshal(args, &in); err != nil {
			return
		}
		if _, err := in.request(fuzzMax); err != nil {
			checkRefusal(t, err, fields)
		}
	})
}
