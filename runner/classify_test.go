package runner

import "testing"

func TestClassify(t *testing.T) {
	tests := []struct {
		name  string
		facts exitFacts
		want  outcome
	}{
		{"success", exitFacts{status: 0}, outcome{StatusExited, 0, ""}},
		{"failure", exitFacts{status: 3}, outcome{StatusExited, 3, ""}},
		{"128 is a code", exitFacts{status: 128}, outcome{StatusExited, 128, ""}},
		{"SIGSEGV", exitFacts{status: 139}, outcome{StatusKilled, 139, "SIGSEGV"}},
		{"SIGKILL without OOM", exitFacts{status: 137}, outcome{StatusKilled, 137, "SIGKILL"}},
		{"OOM", exitFacts{status: 137, oomKills: 1}, outcome{StatusOOM, 137, "SIGKILL"}},
		{"OOM kill of a child, program exits 1", exitFacts{status: 1, oomKills: 1}, outcome{StatusExited, 1, ""}},
		{"timeout", exitFacts{status: 137, timedOut: true}, outcome{StatusTimeout, ExitTimeout, "SIGKILL"}},
		{"timeout wins over OOM", exitFacts{status: 137, timedOut: true, oomKills: 1}, outcome{StatusTimeout, ExitTimeout, "SIGKILL"}},
		{"interrupted", exitFacts{status: 137, interrupted: true}, outcome{StatusKilled, 137, "SIGKILL"}},
		{"exited before the interruption", exitFacts{status: 0, interrupted: true}, outcome{StatusKilled, 0, ""}},
		{"above the signals", exitFacts{status: 200}, outcome{StatusExited, 200, ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(tc.facts); got != tc.want {
				t.Errorf("classify(%+v) = %+v, want %+v", tc.facts, got, tc.want)
			}
		})
	}
}
