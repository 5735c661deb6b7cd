//go:build linux

package leftover

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// StandbyMakers lists the PIDs of the standby makers the boxer binary bin
// started: the detached `boxer standby` processes that wait to remove a
// CLI run's standby sandbox.
func StandbyMakers(bin string) []int {
	return started(bin, func(args []string) bool { return args[len(args)-1] == "standby" })
}

// Keepers lists the PIDs of the session keepers ('bin ... keeper ID') that
// bin started.
func Keepers(bin string) []int {
	return started(bin, func(args []string) bool { return len(args) > 2 && args[len(args)-2] == "keeper" })
}

// started lists the PIDs of the processes of bin whose arguments match.
func started(bin string, match func(args []string) bool) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		if len(args) > 1 && args[0] == bin && match(args) {
			if pid, err := strconv.Atoi(e.Name()); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}
