package boxer_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"testing"
)

// TestOpenAPILint runs redocly lint (the pinned @redocly/cli of
// package.json, with redocly.yaml) on server/openapi.json: any error or
// warning fails it.
func TestOpenAPILint(t *testing.T) {
	const redocly = "node_modules/.bin/redocly"
	if _, err := os.Stat(redocly); err != nil {
		t.Fatalf("redocly is not installed (%v): run 'make test-deps'", err)
	}
	out, err := exec.Command(redocly, "lint", "--config", "redocly.yaml", "--format", "json", "server/openapi.json").Output()
	var report struct {
		Totals   struct{ Errors, Warnings int }
		Problems []struct {
			RuleID, Severity, Message string
			Location                  []struct{ Pointer string }
		}
	}
	if jerr := json.Unmarshal(out, &report); jerr != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("redocly lint: %v, output %q (%v), stderr %s", err, out, jerr, stderr)
	}
	for _, p := range report.Problems {
		where := ""
		if len(p.Location) > 0 {
			where = p.Location[0].Pointer
		}
		t.Errorf("server/openapi.json %s: %s: %s (%s)", where, p.Severity, p.Message, p.RuleID)
	}
	if report.Totals.Errors+report.Totals.Warnings > 0 || err != nil {
		t.Errorf("redocly lint: %d errors, %d warnings (%v)", report.Totals.Errors, report.Totals.Warnings, err)
	}
}
