package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/runner"
)

// jsonFields lists a struct's JSON field names, embedded structs' included.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Tag.Get("json") == "" {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func schemaProps(t *testing.T, doc map[string]any, schema string) []string {
	t.Helper()
	s := doc["components"].(map[string]any)["schemas"].(map[string]any)[schema].(map[string]any)
	var out []string
	for k := range s["properties"].(map[string]any) {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sessionRefused are a RunRequest's fields that a session refuses (400
// naming the field: TestSessionRequestRefuses, and the integration test
// TestSessionHTTP for those the runner refuses): SessionRequest's schema
// leaves them out.
var sessionRefused = []string{"code", "command", "return_files", "stdin"}

// TestOpenAPIMatchesHandler keeps openapi.json and the code in step: the
// request and result schemas list exactly the Go types' JSON fields (but
// what a session refuses), and every documented path is served.
func TestOpenAPIMatchesHandler(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	for _, c := range []struct {
		schema  string
		typ     reflect.Type
		refused []string
	}{
		{"RunRequest", reflect.TypeOf(RunRequest{}), nil},
		{"Result", reflect.TypeOf(runner.Result{}), nil},
		{"StreamEvent", reflect.TypeOf(StreamEvent{}), nil},
		{"Error", reflect.TypeOf(APIError{}), nil},
		{"Health", reflect.TypeOf(healthAnswer{}), nil},
		{"SessionRequest", reflect.TypeOf(SessionRequest{}), sessionRefused},
		{"CallRequest", reflect.TypeOf(CallRequest{}), nil},
		{"Session", reflect.TypeOf(runner.Session{}), nil},
		{"TimeoutRequest", reflect.TypeOf(TimeoutRequest{}), nil},
		{"AllowRequest", reflect.TypeOf(AllowRequest{}), nil},
		{"SessionStats", reflect.TypeOf(runner.SessionStats{}), nil},
		{"NetworkStats", reflect.TypeOf(runner.NetworkStats{}), nil},
		{"FileEntry", reflect.TypeOf(runner.FileEntry{}), nil},
		{"FileList", reflect.TypeOf(ListAnswer{}), nil},
		{"FilePath", reflect.TypeOf(PathRequest{}), nil},
		{"FileMove", reflect.TypeOf(MoveRequest{}), nil},
		{"WatchLine", reflect.TypeOf(WatchLine{}), nil},
		{"ProcessRequest", reflect.TypeOf(runner.ProcessRequest{}), nil},
		{"Process", reflect.TypeOf(runner.ProcessInfo{}), nil},
		{"ProcessEvent", reflect.TypeOf(runner.ProcessEvent{}), nil},
		{"TermSize", reflect.TypeOf(runner.TermSize{}), nil},
	} {
		want := slices.DeleteFunc(jsonFields(c.typ), func(f string) bool { return slices.Contains(c.refused, f) })
		if got := schemaProps(t, doc, c.schema); !slices.Equal(got, want) {
			t.Errorf("schema %s has %v, the Go type %v", c.schema, got, want)
		}
	}
	var names []string
	for _, v := range doc["components"].(map[string]any)["schemas"].(map[string]any)["StreamEvent"].(map[string]any)["properties"].(map[string]any)["stream"].(map[string]any)["enum"].([]any) {
		names = append(names, v.(string))
	}
	if !slices.Equal(names, streamNames[:]) {
		t.Errorf("StreamEvent stream enum %v, the server writes %v", names, streamNames)
	}
	h := New(nil, Config{}).Handler()
	for path, ops := range doc["paths"].(map[string]any) {
		for method := range ops.(map[string]any) {
			if path == "/healthz" || path == "/v1/runs" || strings.HasPrefix(path, "/v1/sessions") {
				continue // need a runner; the integration tests call them
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(strings.ToUpper(method), path, nil))
			if rec.Code != http.StatusOK {
				t.Errorf("%s %s: %d", method, path, rec.Code)
			}
		}
	}
	// Routes the document does not list must not exist.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/runs", nil))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "POST" {
		t.Errorf("GET /v1/runs: %d, want 405 allowing POST", rec.Code)
	}
	// The mux's own 4xx answers have the one error shape.
	for path, code := range map[string]int{"/v1/runs": http.StatusMethodNotAllowed, "/nowhere": http.StatusNotFound} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		var e APIError
		if rec.Code != code || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Field == "" || e.Message == "" {
			t.Errorf("GET %s: %d %q, want %d with a JSON error", path, rec.Code, rec.Body, code)
		}
	}
	served := httptest.NewRecorder()
	h.ServeHTTP(served, httptest.NewRequest("GET", "/v1/openapi.json", nil))
	if served.Body.String() != string(OpenAPI) {
		t.Error("GET /v1/openapi.json does not serve openapi.json")
	}
}

func TestRunRequestDecoding(t *testing.T) {
	max := runner.Maxima{Timeout: 60e9, MemoryBytes: 512 << 20, CPUs: 2, Pids: 100, TmpBytes: 128 << 20, OutputLimit: 4 << 20}
	req, err := RunRequest{Lang: "python", Env: map[string]string{"A": "1"}, Input: Input{Code: "print(1)", Stdin: "in", Files: map[string]string{"a/b.txt": "x"}}}.Request(max)
	if err != nil {
		t.Fatal(err)
	}
	if req.Timeout != 30e9 || req.MemoryBytes != runner.DefaultMemory || req.TmpBytes != runner.DefaultTmpSize || req.Env[0] != "A=1" || string(req.Files["a/b.txt"]) != "x" || req.Stdin == nil {
		t.Errorf("request %+v", req)
	}
	// Defaults above a maximum are lowered to it.
	req, err = RunRequest{Lang: "python", Input: Input{Code: "1"}}.Request(runner.Maxima{Timeout: 5e9, MemoryBytes: 64 << 20})
	if err != nil || req.Timeout != 5e9 || req.MemoryBytes != 64<<20 {
		t.Errorf("lowered defaults: %v %+v", err, req)
	}
	four, thousand, zero, none := 4.0, int64(1000), 0.0, int64(0)
	tests := []struct {
		rr    RunRequest
		field string
	}{
		{RunRequest{}, "lang"},
		{RunRequest{Lang: "cobol"}, "lang"},
		{RunRequest{Lang: "python", Input: Input{Timeout: "soon"}}, "timeout"},
		{RunRequest{Lang: "python", Input: Input{Timeout: "2m"}}, "timeout"},
		{RunRequest{Lang: "python", Input: Input{Memory: "1g"}}, "memory"},
		{RunRequest{Lang: "python", Input: Input{Memory: "lots"}}, "memory"},
		{RunRequest{Lang: "python", Input: Input{CPUs: &four}}, "cpus"},
		{RunRequest{Lang: "python", Input: Input{CPUs: &zero}}, "cpus"},
		{RunRequest{Lang: "python", Input: Input{Pids: &thousand}}, "pids"},
		{RunRequest{Lang: "python", Input: Input{Pids: &none}}, "pids"},
		{RunRequest{Lang: "python", Input: Input{TmpSize: "1g"}}, "tmp_size"},
		{RunRequest{Lang: "python", Input: Input{OutputLimit: "1g"}}, "output_limit"},
		{RunRequest{Lang: "python", Input: Input{Runtime: "kata"}}, "runtime"},
		{RunRequest{Lang: "python", User: "root"}, "user"},
		{RunRequest{Lang: "python", Env: map[string]string{"1X": "y"}}, "env"},
		{RunRequest{Lang: "python", Input: Input{Files: map[string]string{"../x": "y"}}}, "files"},
		{RunRequest{Lang: "python", Command: []string{"true"}}, "command"},
	}
	for _, tc := range tests {
		_, err := tc.rr.Request(max)
		if ae := apiError(err); ae.Field != tc.field || ae.Message == "" || strings.HasPrefix(ae.Message, tc.field) {
			t.Errorf("%+v: err %v, want a %s field error with a message of its own", tc.rr, err, tc.field)
		}
	}
}

// TestSchemasListWhatTheRunnerAccepts: the OpenAPI document and the MCP
// tool's schema list the languages and runtimes the runner takes.
func TestSchemasListWhatTheRunnerAccepts(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	props := doc["components"].(map[string]any)["schemas"].(map[string]any)["RunRequest"].(map[string]any)["properties"].(map[string]any)
	mcpSchema, err := runCodeSchema()
	if err != nil {
		t.Fatal(err)
	}
	for field, want := range map[string][]string{"lang": runner.PresetNames(), "runtime": runner.Runtimes(), "network": runner.Networks()} {
		var got []string
		for _, v := range props[field].(map[string]any)["enum"].([]any) {
			got = append(got, v.(string))
		}
		sort.Strings(got)
		want = slices.Sorted(slices.Values(want))
		if !slices.Equal(got, want) {
			t.Errorf("openapi.json %s enum %v, the runner takes %v", field, got, want)
		}
		if field == "network" {
			continue // not a run_code input
		}
		got = got[:0]
		for _, v := range mcpSchema.Properties[field].Enum {
			got = append(got, v.(string))
		}
		sort.Strings(got)
		if !slices.Equal(got, want) {
			t.Errorf("run_code schema %s enum %v, the runner takes %v", field, got, want)
		}
	}
}

// TestOpenAPIDeclaresEveryStatus: each operation declares every status the
// server can answer it with, so that a client generated from the document
// knows them: 401 everywhere (with --token-file); on a session, 404 (none,
// or another caller's), 410 (its node left the fleet), 500 and 503 (the
// session answers of sessionStatus); 400 and 413 (--max-body) where a body
// is read; 409 where a paused session is refused (its files, processes,
// calls and ports); 429 where a limit of the server's or the caller's can
// be reached; 400, 404, 409 and 422 on every file operation.
func TestOpenAPIDeclaresEveryStatus(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	limited := []string{
		"post /v1/runs", "post /v1/sessions", "post /v1/sessions/{id}/fork", "post /v1/sessions/{id}/runs",
		"post /v1/sessions/{id}/processes", "get /v1/sessions/{id}/processes/{ref}/output", "get /v1/sessions/{id}/fs/watch",
	}
	for path, ops := range doc.Paths {
		for method, raw := range ops {
			var op struct {
				RequestBody json.RawMessage            `json:"requestBody"`
				Responses   map[string]json.RawMessage `json:"responses"`
			}
			if json.Unmarshal(raw, &op) != nil || op.Responses == nil {
				continue // the path's parameters, summary
			}
			want := []string{"401"}
			session := strings.HasPrefix(path, "/v1/sessions/{id}")
			files := strings.Contains(path, "/files/") || strings.Contains(path, "/fs/")
			ports := strings.Contains(path, "/ports/")
			if session {
				want = append(want, "404", "410")
				if !ports {
					// A port's answer is the program's own, any status.
					want = append(want, "500", "503")
				}
			}
			if op.RequestBody != nil && !ports {
				want = append(want, "400", "413")
			}
			for _, part := range []string{"/files/", "/fs/", "/processes", "/runs", "/ports/"} {
				if session && strings.Contains(path, part) {
					want = append(want, "409")
				}
			}
			if slices.Contains(limited, method+" "+path) {
				want = append(want, "429")
			}
			if files {
				want = append(want, "400", "404", "409", "422")
			}
			for _, code := range want {
				if _, ok := op.Responses[code]; !ok {
					t.Errorf("%s %s does not declare %s", strings.ToUpper(method), path, code)
				}
			}
		}
	}
}
