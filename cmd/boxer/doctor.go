package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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
		Name:  "doctor",
		Usage: "check this host for what boxer needs, one line per check",
		Description: `Each line is ok, warn (optional) or FAIL (required) with what to do. Exits 1
when a required check fails, 0 otherwise.`,
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

// doctor runs the checks, those that wait (on a binary's version, a
// socket, a runsc probe) at the same time, and returns them in the order
// of docs/reference.md: as long as the slowest, not the sum.
func doctor(c *cli.Context) []check {
	cfg := daemon.FromEnv()
	// The containerd boxer will use: explicit, the system's, or its private
	// one (running, or started on first use).
	address := c.String("address")
	switch {
	case address != "":
	case cfg.SystemAddress != "" && daemon.Answers(cfg.SystemAddress):
		address = cfg.SystemAddress
	case daemon.GetStatus(cfg).Running:
		address = cfg.Address()
	}
	// The binary matters only when boxer has to start its own daemon.
	external := address != "" && address != cfg.Address()
	return inParallel(
		func() []check { return []check{rootCheck(c)} },
		func() []check { return []check{kernelCheck()} },
		func() []check { return []check{cgroupsCheck()} },
		func() []check { return []check{usernsCheck(c)} },
		func() []check { return []check{containerdCheck(cfg, external)} },
		func() []check { return []check{runcCheck(cfg, address, external)} },
		runscChecks,
		initChecks,
		func() []check {
			return []check{binaryCheck("debootstrap", true, "debootstrap", "--version", "apt-get install debootstrap (needed by 'boxer setup' and 'boxer image build')")}
		},
		func() []check { return socketChecks(c, address) },
	)
}

// inParallel runs each function in a goroutine of its own and returns
// their checks in the order of the functions.
func inParallel(fns ...func() []check) []check {
	results := make([][]check, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = fn()
		}()
	}
	wg.Wait()
	var out []check
	for _, r := range results {
		out = append(out, r...)
	}
	return out
}

// rootCheck fails unless boxer runs as root: everything else it does needs it.
func rootCheck(c *cli.Context) check {
	ch := check{name: "root", required: true}
	if uid := os.Geteuid(); uid != 0 {
		ch.detail = fmt.Sprintf("running as uid %d: %s", uid, notRoot(c))
		return ch
	}
	ch.ok, ch.detail = true, "running as root"
	return ch
}

func kernelCheck() check {
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	return check{name: "kernel", required: true, ok: true, detail: unix.ByteSliceToString(uts.Release[:]) + " " + unix.ByteSliceToString(uts.Machine[:])}
}

func cgroupsCheck() check {
	mode := cgroups.DetectMode()
	cg := check{name: "cgroups", required: true, ok: true, detail: fmt.Sprintf("%s, controllers: %s", mode, strings.Join(cgroups.Controllers(mode), " "))}
	if err := cgroups.Check(mode); err != nil {
		cg.ok, cg.detail = false, err.Error()+": enable the memory, cpu and pids controllers"
	}
	return cg
}

// containerdCheck is the line of the containerd binary boxer would start.
func containerdCheck(cfg daemon.Config, external bool) check {
	ctrd := check{name: "containerd", required: !external}
	if bin, err := cfg.BinaryPath(); err != nil {
		ctrd.detail = err.Error()
		if external {
			ctrd.detail = "no binary for a private daemon (not needed: an external containerd is in use)"
		}
	} else {
		ctrd.ok, ctrd.detail = true, bin+" "+versionOf(bin, "--version")
	}
	return ctrd
}

// socketChecks are the lines of containerd's socket at address and of the
// presets' images behind it.
func socketChecks(c *cli.Context, address string) []check {
	var out []check
	sock := check{name: "socket", required: false}
	var client *containerd.Client
	switch {
	case os.Geteuid() != 0:
		// containerd's socket is root's: no answer says nothing.
		sock.detail = "not checked: only root may talk to containerd (see the root line)"
	case address == "":
		sock.detail = "no containerd answers yet: boxer starts its private one on first use ('boxer setup' or 'boxer containerd start')"
	case !daemon.Answers(address):
		// Said at once: containerd's client would wait out its deadline.
		sock.required = true
		sock.detail = fmt.Sprintf("%s does not answer: nothing listens there", address)
	default:
		ctx, cancel := context.WithTimeout(c.Context, 3*time.Second)
		defer cancel()
		cl, err := containerd.New(address, containerd.WithDefaultNamespace(c.String("namespace")))
		if err == nil {
			var v containerd.Version
			if v, err = cl.Version(ctx); err == nil {
				sock.ok, sock.detail = true, fmt.Sprintf("%s answers: containerd %s", address, v.Version)
				client = cl
				defer cl.Close()
			} else {
				cl.Close()
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

// runscChecks are the lines of runsc: its binary, then its platforms,
// probed at the same time, and its seccomp filter.
func runscChecks() []check {
	rs := runscCheck()
	if !rs.ok {
		return []check{rs}
	}
	runsc, _ := daemon.RuntimeBinary("runsc")
	var probes []func() []check
	for _, platform := range []string{"ptrace", "systrap", "kvm"} {
		probes = append(probes, func() []check {
			if os.Geteuid() != 0 {
				return []check{{name: "runsc " + platform, detail: "not probed: runsc needs root (see the root line)"}}
			}
			return []check{runscPlatformCheck(runsc, platform)}
		})
	}
	out := append([]check{rs}, inParallel(probes...)...)
	return append(out, check{name: "runsc seccomp", ok: true, detail: "boxer's profile applied inside gVisor (--oci-seccomp), on top of gVisor's own host filter"})
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
	line, _, _ := strings.Cut(versionOutput(bin, flag), "\n")
	return line
}

// versionOutput returns what a binary prints of its version, bounded in
// time, without the lines that name its Go and spec versions.
func versionOutput(bin, flag string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, flag).CombinedOutput()
	if err != nil && len(out) == 0 {
		return "(version unknown: " + err.Error() + ")"
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !strings.HasPrefix(l, "spec:") && !strings.HasPrefix(l, "go:") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// runcCheck names the runc that runc sandboxes get: the one the runc shim
// finds on its containerd's PATH (boxer names no runc binary for them), read
// from the environment of the containerd at address, or the PATH boxer gives
// the private containerd it would start. It warns when that runc predates
// the fixes for the November 2025 container escapes.
func runcCheck(cfg daemon.Config, address string, external bool) check {
	ch := check{name: "runc", required: true}
	var path, source string
	if address != "" && daemon.Answers(address) {
		path, source = daemon.ContainerdPath(address)
		source = fmt.Sprintf("%s at %s", source, address)
	} else {
		p, err := cfg.DaemonPath()
		if err != nil {
			ch.detail = "not checked: no containerd to run it (see the containerd line)"
			return ch
		}
		path, source = p, "PATH of the private containerd boxer starts"
	}
	bin, err := daemon.LookPathIn("runc", path)
	if err != nil {
		ch.detail = fmt.Sprintf("not found on the %s: run 'make deps' (builds runc into %s)", source, daemon.LibexecDir)
		return ch
	}
	out := versionOutput(bin, "--version")
	ch.ok, ch.detail = true, fmt.Sprintf("%s (%s), from the %s", bin, strings.Join(strings.Split(out, "\n"), ", "), source)
	version := daemon.RuncVersion(out)
	advice := fmt.Sprintf("run 'make deps' (builds runc into %s, first on the private containerd's PATH)", daemon.LibexecDir)
	if external {
		advice = "upgrade the runc on that containerd's PATH, or use boxer's private containerd (BOXER_SYSTEM_ADDRESS= after 'make deps')"
	}
	switch fixed, err := daemon.RuncHasEscapeFixes(version); {
	case err != nil:
		ch.ok, ch.required = false, false
		ch.detail += fmt.Sprintf("; cannot tell whether it has the fixes for %s (%v): %s", daemon.RuncEscapeCVEs, err, advice)
	case !fixed:
		ch.ok, ch.required = false, false
		ch.detail += fmt.Sprintf("; older than the first releases with the fixes for %s (1.2.8, 1.3.3, 1.4.0): %s", daemon.RuncEscapeCVEs, advice)
	default:
		if fixed, _ := daemon.RuncHasNovember2026Fixes(version); !fixed {
			ch.ok, ch.required = false, false
			ch.detail += fmt.Sprintf("; older than runc 1.5.3, which fixes %s: %s", daemon.RuncNovember2026Fixes, advice)
		}
	}
	return ch
}

// runscCheck names the runsc that runsc sandboxes get on any containerd:
// boxer's wrapper runs it by path.
func runscCheck() check {
	ch := check{name: "runsc"}
	bin, err := daemon.RuntimeBinary("runsc")
	if err != nil {
		ch.detail = fmt.Sprintf("not found (optional, gVisor): run 'make deps' (builds runsc into %s)", daemon.LibexecDir)
		return ch
	}
	ch.ok, ch.detail = true, bin+" "+versionOf(bin, "--version")
	return ch
}

// runscPlatformCheck runs 'runsc --platform=P do true' with a deadline: the
// KVM platform hangs on some hosts, and doctor must not. A probe leaves
// nothing behind, even one killed at its deadline: it makes no cgroup
// (--ignore-cgroups), its state and any mount runsc pins there (the gofer's
// null-netns) live in a temporary directory that is unmounted and removed
// afterwards, and the sandbox and gofer runsc starts in sessions of their
// own are killed by the directory they name.
func runscPlatformCheck(bin, platform string) check {
	ch := check{name: "runsc " + platform}
	if platform == "kvm" {
		if _, err := os.Stat("/dev/kvm"); err != nil {
			ch.detail = "no /dev/kvm (not used by boxer)"
			return ch
		}
	}
	tmp, err := os.MkdirTemp("", "boxer-doctor-")
	if err != nil {
		ch.detail = "cannot probe: " + err.Error()
		return ch
	}
	defer removeProbeDir(tmp)
	limit := probeTimeout(platform)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--platform="+platform, "--network=none", "--ignore-cgroups", "do", "true")
	// runsc do keeps its root and bundle under TMPDIR.
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// The output goes to a file, not a pipe: the sandbox and gofer, in
	// sessions of their own, may hold it open after runsc is killed, and
	// a pipe would keep Wait waiting for them (removeProbeDir ends them).
	outFile, err := os.Create(filepath.Join(tmp, "probe.out"))
	if err != nil {
		ch.detail = "cannot probe: " + err.Error()
		return ch
	}
	defer outFile.Close()
	cmd.Stdout, cmd.Stderr = outFile, outFile
	start := time.Now()
	err = cmd.Run()
	out, _ := os.ReadFile(outFile.Name())
	switch {
	case ctx.Err() != nil:
		ch.detail = fmt.Sprintf("no answer within %s: cut off (boxer uses ptrace)", limit)
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

// probeTimeout bounds the probe of a platform. 'runsc do true' takes a
// few hundred milliseconds where a platform works; KVM's hangs on some
// hosts (nested virtualisation) and boxer does not use it, so its probe is
// cut off soon; a hang of the others is worth the wait to report.
func probeTimeout(platform string) time.Duration {
	if platform == "kvm" {
		return time.Second
	}
	return 5 * time.Second
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}
