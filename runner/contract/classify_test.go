package contract

import "testing"

func TestClassify(t *testing.T) {
	tests := []struct {
		name  string
		facts ExitFacts
		want  outcome
	}{
		{"success", ExitFacts{Status: 0}, outcome{StatusExited, 0, ""}},
		{"failure", ExitFacts{Status: 3}, outcome{StatusExited, 3, ""}},
		{"128 is a code", ExitFacts{Status: 128}, outcome{StatusExited, 128, ""}},
		{"SIGSEGV", ExitFacts{Status: 139}, outcome{StatusKilled, 139, "SIGSEGV"}},
		{"SIGKILL without OOM", ExitFacts{Status: 137}, outcome{StatusKilled, 137, "SIGKILL"}},
		{"OOM", ExitFacts{Status: 137, OOMKills: 1}, outcome{StatusOOM, 137, "SIGKILL"}},
		{"OOM kill of a child, program exits 1", ExitFacts{Status: 1, OOMKills: 1}, outcome{StatusExited, 1, ""}},
		{"timeout", ExitFacts{Status: 137, TimedOut: true}, outcome{StatusTimeout, ExitTimeout, "SIGKILL"}},
		{"timeout wins over OOM", ExitFacts{Status: 137, TimedOut: true, OOMKills: 1}, outcome{StatusTimeout, ExitTimeout, "SIGKILL"}},
		{"interrupted", ExitFacts{Status: 137, Interrupted: true}, outcome{StatusKilled, 137, "SIGKILL"}},
		{"exited before the interruption", ExitFacts{Status: 0, Interrupted: true}, outcome{StatusKilled, 0, ""}},
		{"above the signals", ExitFacts{Status: 200}, outcome{StatusExited, 200, ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.facts); got != tc.want {
				t.Errorf("classify(%+v) = %+v, want %+v", tc.facts, got, tc.want)
			}
		})
	}
}

// TestExecFailure reads the runtimes' own words for a command that cannot
// run, as boxer gets them through containerd (runtimeError's text): the one
// place boxer tells errors apart by text. Messages taken from each runtime
// here: "boxer run --image boxer/bash -- CMD" with CMD no-such-command,
// /no/such/file, /etc/passwd and /tmp.
func TestExecFailure(t *testing.T) {
	const (
		runcCreate  = "starting sandbox: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: "
		runscStart  = "starting sandbox: OCI runtime start failed: starting container: starting root container: starting sandbox: "
		runscCreate = runscStart + "creating process: "
	)
	tests := []struct {
		runtime, msg string
		code         int
		detail       string
	}{
		{"runc 1.1.5", runcCreate + `exec: "no-such-command": executable file not found in $PATH`, ExitNotFound, `exec: "no-such-command": executable file not found in $PATH`},
		{"runc 1.1.5", runcCreate + `exec: "/no/such/file": stat /no/such/file: no such file or directory`, ExitNotFound, `exec: "/no/such/file": stat /no/such/file: no such file or directory`},
		{"runc 1.1.5", runcCreate + `exec: "/etc/passwd": permission denied`, ExitCannotExec, `exec: "/etc/passwd": permission denied`},
		{"runc 1.1.5", runcCreate + `exec: "/tmp": permission denied`, ExitCannotExec, `exec: "/tmp": permission denied`},
		{"runc 1.5.2", runcCreate + `error during container init: exec: "no-such-command": executable file not found in $PATH`, ExitNotFound, `exec: "no-such-command": executable file not found in $PATH`},
		{"runc 1.5.2", runcCreate + `error during container init: exec: "/no/such/file": stat /no/such/file: no such file or directory`, ExitNotFound, `exec: "/no/such/file": stat /no/such/file: no such file or directory`},
		{"runc 1.5.2", runcCreate + `error during container init: exec: "/etc/passwd": permission denied`, ExitCannotExec, `exec: "/etc/passwd": permission denied`},
		{"runc 1.5.2", runcCreate + `error during container init: exec: "/tmp": is a directory`, ExitCannotExec, `exec: "/tmp": is a directory`},
		{"runc, through containerd 1.6", runcCreate + `exec: "x": executable file not found in $PATH: unknown`, ExitNotFound, `exec: "x": executable file not found in $PATH`},
		{"runsc 2022-12", runscStart + `error finding executable "no-such-command" in PATH [/usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin]: no such file or directory`, ExitNotFound, `error finding executable "no-such-command" in PATH [/usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin]: no such file or directory`},
		{"runsc 2022-12", runscCreate + "failed to load /no/such/file: no such file or directory", ExitNotFound, "failed to load /no/such/file: no such file or directory"},
		{"runsc 2022-12", runscCreate + "failed to load /etc/passwd: permission denied", ExitCannotExec, "failed to load /etc/passwd: permission denied"},
		{"runsc 2022-12", runscCreate + "failed to load /tmp: permission denied", ExitCannotExec, "failed to load /tmp: permission denied"},
		// runsc of 2026-09 (gvisor.dev/gvisor v0.0.0-20260905035102) says the same.
		{"runsc 2026-09", runscStart + `error finding executable "no-such-command" in PATH [/usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin]: no such file or directory`, ExitNotFound, `error finding executable "no-such-command" in PATH [/usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin]: no such file or directory`},
		{"runsc 2026-09", runscCreate + "failed to load /etc/passwd: permission denied", ExitCannotExec, "failed to load /etc/passwd: permission denied"},
	}
	for _, tc := range tests {
		t.Run(tc.runtime, func(t *testing.T) {
			code, detail, ok := ExecFailure(tc.msg)
			if !ok || code != tc.code || detail != tc.detail {
				t.Errorf("execFailure(%q) = %d, %q, %v; want %d, %q", tc.msg, code, detail, ok, tc.code, tc.detail)
			}
		})
	}
	// Other failures of the runtime are boxer's (125), not the command's.
	for _, msg := range []string{
		runcCreate + "unable to apply cgroup configuration: openat2 /sys/fs/cgroup/cpuset/x/cpuset.mems: no such file or directory",
		"starting sandbox: failed to create shim task: context deadline exceeded",
		runscStart + "cannot run with network enabled in root network namespace",
	} {
		if code, _, ok := ExecFailure(msg); ok {
			t.Errorf("execFailure(%q) = %d: not a command's failure", msg, code)
		}
	}
}

// TestInitExecFailure: boxer-init's line on stderr, with the status that
// goes with it and no other output, is a failure to execute the program;
// anything else is the program's own.
func TestInitExecFailure(t *testing.T) {
	tests := []struct {
		name           string
		status         uint32
		stdout, stderr string
		want           string
	}{
		{"not found", 127, "", "boxer-init: exec: \"nope\": executable file not found in $PATH\n", `exec: "nope": executable file not found in $PATH`},
		{"no such path", 127, "", "boxer-init: exec: \"/no/such\": no such file or directory\n", `exec: "/no/such": no such file or directory`},
		{"not executable", 126, "", "boxer-init: exec: \"/etc/passwd\": permission denied\n", `exec: "/etc/passwd": permission denied`},
		{"format", 126, "", "boxer-init: exec: \"/x\": exec format error\n", `exec: "/x": exec format error`},
		{"status disagrees", 1, "", "boxer-init: exec: \"nope\": executable file not found in $PATH\n", ""},
		{"126 for not found", 126, "", "boxer-init: exec: \"nope\": executable file not found in $PATH\n", ""},
		{"output too", 127, "hi\n", "boxer-init: exec: \"nope\": executable file not found in $PATH\n", ""},
		{"two lines", 127, "", "boxer-init: exec: \"nope\": executable file not found in $PATH\nmore\n", ""},
		{"no newline", 127, "", "boxer-init: exec: \"nope\": executable file not found in $PATH", ""},
		{"a shell's", 127, "", "sh: 1: nope: not found\n", ""},
		{"other words", 127, "", "boxer-init: fork: Resource temporarily unavailable\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := InitExecFailure(tc.status, tc.stdout, tc.stderr)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("initExecFailure = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}
