package contract

// A code interpreter's cells: their records and checks.

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCellRecords: records split across frames, several in one frame,
// one over the cap dropped with a word on stderr, one that is not JSON.
func TestCellRecords(t *testing.T) {
	var got []CellRecord
	var warned []string
	r := &CellRecords{Cell: &Cell{Record: func(rec CellRecord) { got = append(got, rec) }}, Warn: func(s string) { warned = append(warned, s) }}
	r.Write([]byte(`{"kind":"count","count":1}` + "\n" + `{"kind":"result","main":true,"da`))
	r.Write([]byte(`ta":{"text/plain":"42"}}`))
	r.Write([]byte("\n"))
	big := `{"kind":"result","data":{"image/png":"` + strings.Repeat("A", cellMaxRecord) + `"}}` + "\n"
	for i := 0; i < len(big); i += 65536 {
		r.Write([]byte(big[i:min(i+65536, len(big))]))
	}
	r.Write([]byte("not json\n" + `{"kind":"error","name":"ValueError","value":"v","traceback":"t"}` + "\n"))
	if len(got) != 3 || got[0].Kind != "count" || got[0].Count != 1 || !got[1].Main || string(got[1].Data["text/plain"]) != `"42"` || got[2].Name != "ValueError" {
		t.Errorf("records = %+v", got)
	}
	if len(warned) != 2 || !strings.Contains(warned[0], "was dropped: it is over 32 MiB") || !strings.Contains(warned[1], "not JSON") {
		t.Errorf("warnings = %q", warned)
	}
}

// TestCellCheck: what a cell refuses before it runs.
func TestCellCheck(t *testing.T) {
	tests := []struct {
		name string
		lang string
		cell Cell
		says string
	}{
		{"bash", "bash", Cell{}, "cells need a python or python-data session"},
		{"op", "python", Cell{Op: "boom"}, `unknown cell operation "boom"`},
		{"env name", "python", Cell{Env: map[string]string{"A=B": "1"}}, `"A=B"`},
		{"env value", "python-data", Cell{GlobalEnv: map[string]string{"A": "\x00"}}, `"A"`},
		{"cwd", "python", Cell{Op: CellCreate, Cwd: "rel"}, "absolute path"},
		{"fine", "python-data", Cell{Op: CellCreate, Cwd: "/tmp", Env: map[string]string{"A": "b"}}, ""},
		{"bash context", "python", Cell{Context: "c", Language: CellBash}, ""},
		{"bash unnamed", "python", Cell{Language: CellBash}, `context must name a bash context`},
		{"javascript context", "python-data", Cell{Context: "c", Language: CellJavaScript}, ""},
		{"typescript unnamed", "python", Cell{Language: CellTypeScript}, `context must name a typescript context`},
		{"language", "python", Cell{Context: "c", Language: "r"}, `language must be python, bash, javascript or typescript, not "r"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cell.Check(tc.lang, tc.lang != "bash")
			if (tc.says == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.says) {
				t.Errorf("check = %v, want %q", err, tc.says)
			}
		})
	}
	spec, err := (&Cell{Context: "c", Env: map[string]string{"A": "b"}}).Spec([]byte("x + 1"))
	var back cellSpec
	if err != nil || json.Unmarshal(spec, &back) != nil || back.Op != CellExec || back.Code != "x + 1" || back.Context != "c" || back.Env["A"] != "b" || back.Language != "" {
		t.Errorf("spec = %s, %v", spec, err)
	}
	spec, err = (&Cell{Context: "c", Language: CellBash}).Spec([]byte("echo hi"))
	if err != nil || !strings.Contains(string(spec), `"language":"bash"`) {
		t.Errorf("bash spec = %s, %v", spec, err)
	}
}
