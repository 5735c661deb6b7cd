package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/cgroups"
	"github.com/boxer-dev/boxer/daemon"
	"github.com/boxer-dev/boxer/runner"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

// check is one line of 'boxer doctor'.
type check struct {
	name     string
	required bool
	ok       bool
	detail   string
}

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:         "doctor",
		Usage:        "check this host for what boxer needs, one line per check",
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			failed := false
			for _, ch := range doctor(c) {
				mark := "ok  "
				switch {
				case !ch.ok && ch.required:
					mark, failed = "FAIL", true
				case !ch.ok:
					mark = "warn"
				}
				fmt.Printf("%s  %-14s %s\n", mark, ch.name, ch.detail)
			}
			if failed {
				return &exitError{code: 1}
			}
			return nil
		},
	}
}

func doctor(c *cli.Context) []check {
	var out []check
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	out = append(out, check{name: "kernel", required: true, ok: true, detail: unix.ByteSliceToString(uts.Release[:]) + " " + unix.ByteSliceToString(uts.Machine[:])})

	mode := cgroups.DetectMode()
	cg := check{name: "cgroups", required: true, ok: true, detail: fmt.Sprintf("%s, controllers: %s", mode, strings.Join(cgroups.Controllers(mode), " "))}
	if err := cgroups.Check(mode); err != nil {
		cg.ok, cg.detail = false, err.Error()+": enable the memory, cpu and pids controllers"
	}
	out = append(out, cg)

	cfg := daemon.FromEnv()
	// The binary matters only when boxer has to start its own daemon.
	external := c.String("address") != "" || cfg.SystemAddress != "" && daemon.Answers(cfg.SystemAddress)
	ctrd := check{name: "containerd", required: !external}
	if bin, err := cfg.BinaryPath(); err != nil {
		ctrd.detail = err.Error()
		if external {
			ctrd.detail = "no binary for a private daemon (not needed: an external containerd is in use)"
		}
	} else {
		ctrd.ok, ctrd.detail = true, bin+" "+versionOf(bin, "--version")
	}
	out = append(out, ctrd)
	out = append(out, binaryCheck("runc", true, "runc", "--version", "apt-get install runc"))
	rs := binaryCheck("runsc", false, "runsc", "--version", "optional (gVisor): apt-get install runsc")
	out = append(out, rs)
	if rs.ok {
		for _, platform := range []string{"ptrace", "kvm"} {
			out = append(out, runscPlatformCheck(platform))
		}
		out = append(out, check{name: "runsc seccomp", ok: true, detail: "boxer's profile applied inside gVisor (--oci-seccomp), on top of gVisor's own host filter"})
	}
	out = append(out, binaryCheck("debootstrap", true, "debootstrap", "--version", "apt-get install debootstrap (needed by 'boxer setup' and 'boxer image build')"))

	sock := check{name: "socket", required: false}
	address := c.String("address")
	switch {
	case address != "":
	case cfg.SystemAddress != "" && daemon.Answers(cfg.SystemAddress):
		address = cfg.SystemAddress
	case daemon.GetStatus(cfg).Running:
		address = cfg.Address()
	}
	var client *containerd.Client
	if address == "" {
		sock.detail = "no containerd answers yet: boxer starts its private one on first use ('boxer setup' or 'boxer containerd start')"
	} else {
		ctx, cancel := context.WithTimeout(c.Context, 3*time.Second)
		defer cancel()
		cl, err := containerd.New(address, containerd.WithDefaultNamespace(c.String("namespace")))
		if err == nil {
			var v containerd.Version
			if v, err = cl.Version(ctx); err == nil {
				sock.ok, sock.detail = true, fmt.Sprintf("%s answers: containerd %s", address, v.Version)
				client = cl
				defer cl.Close()
			}
		}
		if err != nil {
			sock.required = true
			sock.detail = fmt.Sprintf("%s does not answer: %v", address, err)
		}
	}
	out = append(out, sock)

	for _, p := range runner.Presets() {
		name := p.Name
		im := check{name: "image", required: client != nil}
		switch {
		case client == nil:
			im.detail = fmt.Sprintf("%s: not checked (no containerd)", p.Image)
		default:
			ctx, cancel := context.WithTimeout(c.Context, 3*time.Second)
			_, err := client.ImageService().Get(ctx, p.Image)
			cancel()
			if err != nil {
				im.detail = fmt.Sprintf("%s missing: run 'boxer setup --lang %s'", p.Image, name)
			} else {
				im.ok, im.detail = true, fmt.Sprintf("%s present (--lang %s)", p.Image, name)
			}
		}
		out = append(out, im)
	}
	return out
}

func binaryCheck(name string, required bool, bin, versionFlag, install string) check {
	ch := check{name: name, required: required}
	p, err := exec.LookPath(bin)
	if err != nil {
		if q := daemon.LibexecDir + "/" + bin; isExec(q) {
			p, err = q, nil
		}
	}
	if err != nil {
		ch.detail = "not found: " + install
		return ch
	}
	ch.ok, ch.detail = true, p+" "+versionOf(p, versionFlag)
	return ch
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode()&0o111 != 0
}

// versionOf returns the first line a binary prints of its version, bounded in time.
func versionOf(bin, flag string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, flag).CombinedOutput()
	if err != nil && len(out) == 0 {
		return "(version unknown: " + err.Error() + ")"
	}
	line, _, _ := bytes.Cut(bytes.TrimSpace(out), []byte("\n"))
	return string(line)
}

// runscPlatformCheck runs 'runsc --platform=P do true' with a deadline: the
// KVM platform hangs on some hosts, and doctor must not.
func runscPlatformCheck(platform string) check {
	ch := check{name: "runsc " + platform}
	bin, err := exec.LookPath("runsc")
	if err != nil {
		ch.detail = "runsc not found"
		return ch
	}
	if platform == "kvm" {
		if _, err := os.Stat("/dev/kvm"); err != nil {
			ch.detail = "no /dev/kvm (not used by boxer)"
			return ch
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), runscProbeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--platform="+platform, "--network=none", "do", "true")
	// runsc starts a sandbox and a gofer: a hung probe ends with all of them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	switch {
	case ctx.Err() != nil:
		ch.detail = fmt.Sprintf("hangs: gave up after %s (boxer uses ptrace)", runscProbeTimeout)
	case err != nil:
		ch.detail = "fails: " + oneLine(lastLine(out))
	default:
		ch.ok, ch.detail = true, fmt.Sprintf("works ('runsc do true' in %.0f ms)", float64(time.Since(start).Microseconds())/1000)
		if platform == "ptrace" {
			ch.detail += ", used by boxer"
		}
	}
	return ch
}

// runscProbeTimeout bounds one platform probe.
const runscProbeTimeout = 10 * time.Second

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}
