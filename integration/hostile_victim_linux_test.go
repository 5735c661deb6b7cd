package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// victimProgram is another tenant's sandbox, beside the hostile programs:
// it marks its workspace and waits until the host writes done there.
const victimProgram = `
import os, time
open("/workspace/victim", "w").close()
while not os.path.exists("/workspace/done"):
    time.sleep(0.2)
`

// victim is a runc sandbox of the default user, alive while the hostile
// programs run, whose processes none of them may reach.
type victim struct {
	b    *background
	mark string
	dir  string
	// pids are the host PIDs of its processes: boxer-init and the program.
	pids []int
}

// startVictim starts a victim sandbox and waits until its program runs.
func startVictim(t *testing.T) *victim {
	t.Helper()
	v := &victim{mark: "BOXER_VICTIM=" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	v.b = startBoxer(t, nil, "run", "--lang", "python", "--runtime", "runc", "--timeout", "2h", "--env", v.mark, "-c", victimProgram)
	deadline := time.Now().Add(60 * time.Second)
	for {
		files, _ := filepath.Glob(filepath.Join(stateDir, "runs", "*", "workspace", "victim"))
		v.pids = v.processes()
		if len(files) == 1 && len(v.pids) == 2 && v.program() != 0 {
			v.dir = filepath.Dir(filepath.Dir(files[0]))
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("the victim sandbox did not start: %d marks, processes %v: %s", len(files), v.pids, v.b.err.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processes are the host PIDs of the processes with the victim's mark.
func (v *victim) processes() []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		env, err := os.ReadFile(p + "/environ")
		if err == nil && bytes.Contains(env, []byte(v.mark)) {
			pid, _ := strconv.Atoi(filepath.Base(p))
			pids = append(pids, pid)
		}
	}
	return pids
}

// program is the host PID of the victim's program, boxer-init's child.
func (v *victim) program() int {
	for _, pid := range v.pids {
		status, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		for _, line := range strings.Split(string(status), "\n") {
			if ppid, ok := strings.CutPrefix(line, "PPid:\t"); ok && slices.Contains(v.pids, atoi(ppid)) {
				return pid
			}
		}
	}
	return 0
}

func atoi(s string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(s))
	return n
}

// alive says whether every process of the victim still runs.
func (v *victim) alive() bool {
	return slices.Equal(v.processes(), v.pids)
}

// stop lets the victim end and checks that it ended well.
func (v *victim) stop(t *testing.T) {
	t.Helper()
	must(t, os.WriteFile(filepath.Join(v.dir, "workspace", "done"), nil, 0o644))
	if err := v.b.cmd.Wait(); err != nil {
		t.Errorf("the victim sandbox: %v: %s", err, v.b.err.String())
	}
}
