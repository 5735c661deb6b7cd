package interp

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/runner"
)

// TestCellEvent: each record of a cell is E2B's event, as the SDK's
// parser reads it.
func TestCellEvent(t *testing.T) {
	tests := []struct {
		name string
		rec  runner.CellRecord
		want string
	}{
		{"count", runner.CellRecord{Kind: "count", Count: 3}, `{"execution_count":3,"type":"number_of_executions"}`},
		{"main result", runner.CellRecord{Kind: "result", Main: true, Data: map[string]json.RawMessage{"text/plain": json.RawMessage(`"42"`)}}, `{"is_main_result":true,"text":"42","type":"result"}`},
		{"a str's quotes dropped", runner.CellRecord{Kind: "result", Main: true, Data: map[string]json.RawMessage{"text/plain": json.RawMessage(`"'hi'"`)}}, `{"is_main_result":true,"text":"hi","type":"result"}`},
		{"figure", runner.CellRecord{Kind: "result", Data: map[string]json.RawMessage{"text/plain": json.RawMessage(`"<Figure size 640x480 with 1 Axes>"`), "image/png": json.RawMessage(`"iVBOR"`)}}, `{"is_main_result":false,"png":"iVBOR","text":"<Figure size 640x480 with 1 Axes>","type":"result"}`},
		{"formats", runner.CellRecord{Kind: "result", Main: true, Data: map[string]json.RawMessage{"text/html": json.RawMessage(`"<b>"`), "application/json": json.RawMessage(`{"a":1}`), "text/x-other": json.RawMessage(`"o"`)}}, `{"extra":{"text/x-other":"o"},"html":"<b>","is_main_result":true,"json":{"a":1},"type":"result"}`},
		{"error", runner.CellRecord{Kind: "error", Name: "ZeroDivisionError", Value: "division by zero", Traceback: "Traceback..."}, `{"name":"ZeroDivisionError","traceback":"Traceback...","type":"error","value":"division by zero"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := encodeEvent(cellEvent(tc.rec))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want+"\n" {
				t.Errorf("event = %s, want %s", got, tc.want)
			}
		})
	}
	if ev := cellEvent(runner.CellRecord{Kind: "other"}); ev != nil {
		t.Errorf("unknown record: %v, want nil", ev)
	}
}

func TestUnquote(t *testing.T) {
	for in, want := range map[string]string{`'hi'`: "hi", `"hi"`: "hi", `'`: `'`, `42`: "42", `'a"`: `'a"`, `''`: ""} {
		if got := unquote(in); got != want {
			t.Errorf("unquote(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestExecStream: output split inside a character comes out whole, each
// event a line, end to end.
func TestExecStream(t *testing.T) {
	rec := httptest.NewRecorder()
	e := newExecStream(rec, func() { t.Error("gone called") })
	out, errs := output{e: e, kind: "stdout"}, output{e: e, kind: "stderr", tail: 1}
	e.record(runner.CellRecord{Kind: "count", Count: 1})
	snow := []byte("☃\n")
	_, _ = out.Write(append([]byte("a"), snow[:1]...))
	_, _ = errs.Write([]byte("warn\n"))
	_, _ = out.Write(snow[1:])
	_, _ = out.Write(snow[:2])
	e.flush()
	e.send(map[string]any{"type": "end_of_execution"})
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/x-ndjson" {
		t.Errorf("status %d, type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSuffix(rec.Body.String(), "\n"), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if ev["type"] == "stdout" || ev["type"] == "stderr" {
			if ts, _ := ev["timestamp"].(string); ts == "" {
				t.Errorf("%s event without a timestamp: %s", ev["type"], line)
			}
			got = append(got, ev["type"].(string)+":"+ev["text"].(string))
		} else {
			got = append(got, ev["type"].(string))
		}
	}
	want := []string{"number_of_executions", "stdout:a", "stderr:warn\n", "stdout:☃\n", "stdout:\ufffd\ufffd", "end_of_execution"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}

func TestCompleteUTF8(t *testing.T) {
	tests := []struct{ in, text, rest string }{
		{"abc", "abc", ""},
		{"a\xe2\x98", "a", "\xe2\x98"},
		{"a\xe2\x98\x83", "a☃", ""},
		{"\xf0\x9f\x98", "", "\xf0\x9f\x98"},
		{"a\xff", "a\xff", ""},
	}
	for _, tc := range tests {
		text, rest := completeUTF8([]byte(tc.in))
		if text != tc.text || string(rest) != tc.rest {
			t.Errorf("completeUTF8(%q) = %q, %q; want %q, %q", tc.in, text, rest, tc.text, tc.rest)
		}
	}
}
