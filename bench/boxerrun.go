//go:build linux

package main

// boxer run's rows: cold, with a standby, with a network allowlist, and the
// same on runsc beside ctr run on runsc.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/boxer-dev/boxer/daemon"
)

// boxerRuns are boxer run's rows on runc: cold (no standby), taking the
// standby the run before left, and with a network allowlist.
func boxerRuns(boxerBin, address string) []*contender {
	return []*contender{
		{name: "boxer run", once: command(func(int) *exec.Cmd {
			return noStandby(exec.Command(boxerBin, "--address", address, "run", "--lang", "python", "-c", "print(1)"))
		})},
		{name: "boxer run, standby", once: command(func(int) *exec.Cmd {
			// Each run takes the standby the one before left.
			cmd := exec.Command(boxerBin, "--address", address, "run", "--lang", "python", "-c", "print(1)")
			cmd.Env = append(os.Environ(), "BOXER_STANDBY=1", "BOXER_STANDBY_IDLE=2m")
			return cmd
		})},
		{name: "boxer run, network allowlist", once: command(func(int) *exec.Cmd {
			// The cost of a link out (namespace, veth, rules, proxy and
			// resolver), with a destination the program does not use.
			return noStandby(exec.Command(boxerBin, "--address", address, "run", "--allow-host", benchHost, "--lang", "python", "-c", "print(1)"))
		})},
	}
}

// runscRows are the rows on gVisor: ctr run through boxer's runsc wrapper
// (their base), and boxer run cold and with a standby.
func runscRows(boxerBin, address, image, wrapper string) []*contender {
	return []*contender{
		{name: "ctr run, runsc", group: "runsc", once: command(ctrRun(address, image, "ctr-runsc", "--runc-binary", wrapper))},
		{name: "boxer run, runsc", group: "runsc", once: command(func(int) *exec.Cmd {
			return noStandby(exec.Command(boxerBin, "--address", address, "run", "--runtime", "runsc", "--lang", "python", "-c", "print(1)"))
		})},
		{name: "boxer run, runsc, standby", group: "runsc", once: command(func(int) *exec.Cmd {
			cmd := exec.Command(boxerBin, "--address", address, "run", "--runtime", "runsc", "--lang", "python", "-c", "print(1)")
			cmd.Env = append(os.Environ(), "BOXER_STANDBY=1", "BOXER_STANDBY_IDLE=2m")
			return cmd
		})},
	}
}

// runscWrapper runs one boxer sandbox on runsc so that boxer writes its
// runsc wrapper, and returns the wrapper's path for ctr's --runc-binary: both
// rows then run runsc with the same flags.
func runscWrapper(boxerBin, address string) (string, error) {
	out, err := exec.Command(boxerBin, "--address", address, "run", "--runtime", "runsc", "--lang", "bash", "-c", "true").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("boxer run --runtime runsc: %v: %s", err, lastLine(string(out)))
	}
	p := filepath.Join(daemon.FromEnv().State, "runsc")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("runsc wrapper: %w", err)
	}
	return p, nil
}
