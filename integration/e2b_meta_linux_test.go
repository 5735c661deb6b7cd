package integration

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestE2BFileMetadata: E2B's file metadata (user.e2b.* extended
// attributes) through the SDK, on runc and runsc; boxer's CLI shows it on
// the same file.
func TestE2BFileMetadata(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			e := startE2B(t, "--runtime", rt)
			out := lines(e.node(t, e.keys[0], envdScript(t, "envd_metadata.mjs")))
			id := strings.TrimPrefix(out[len(out)-1], "id ")
			checkLines(t, "metadata", out[:len(out)-1], []string{
				`write {"author":"mish","purpose":"upload"} {"author":"mish","purpose":"upload"}`,
				`raw {"author":"mish","purpose":"upload"} {"author":"mish","purpose":"upload"}`,
				`writeFiles {"source":"suite"} {"source":"suite"}`,
				`list one.txt={"source":"suite"} two.txt={"source":"suite"}`,
				`rename {"author":"mish","purpose":"upload"}`,
				`overwrite null null`,
				`none null`,
				`invalid InvalidArgumentError`,
				`invalid InvalidArgumentError`,
				`invalid InvalidArgumentError`,
				`invalid exists false`,
				`xattr set {"author":"inside"}`,
				`inside upload`,
			})
			var entry struct {
				Metadata map[string]string `json:"metadata"`
			}
			r := boxer(t, nil, "session", "files", id, "stat", "/home/user/raw.txt", "--json")
			if err := json.Unmarshal([]byte(r.stdout), &entry); err != nil || entry.Metadata["purpose"] != "upload" {
				t.Errorf("boxer session files stat: %d %q %q (%v), want its metadata", r.code, r.stdout, r.stderr, err)
			}
			e.stop(t)
			assertClean(t)
		})
	}
}
