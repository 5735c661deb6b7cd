package integration

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Each test here runs a hostile program inside a sandbox and checks that it
// failed, and failed for the right reason.

func TestCapabilitiesNoNewPrivsSeccomp(t *testing.T) {
	res, _ := python(t, `print(open("/proc/self/status").read())`)
	if res.Status != "exited" || res.ExitCode != 0 {
		t.Fatalf("status %s exit %d: %s", res.Status, res.ExitCode, res.Stderr)
	}
	want := map[string]string{
		"CapInh":     "0000000000000000",
		"CapPrm":     "0000000000000000",
		"CapEff":     "0000000000000000",
		"CapBnd":     "0000000000000000",
		"CapAmb":     "0000000000000000",
		"NoNewPrivs": "1",
		"Seccomp":    "2",
	}
	got := map[string]string{}
	for _, line := range strings.Split(res.Stdout, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			got[k] = strings.TrimSpace(v)
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	assertClean(t)
}

func TestReadOnlyRoot(t *testing.T) {
	code := `
import errno
for p in ["/x", "/etc/passwd", "/bin/sh", "/code/main.py"]:
    try:
        open(p, "a").close()
        print(p, "WRITABLE")
    except OSError as e:
        print(p, errno.errorcode[e.errno])
`
	// As uid 0 of the host's user namespace (still without any
	// capability) file permissions allow the writes, so only the
	// read-only mounts stand in the way.
	res := pythonIn(t, []string{"BOXER_USERNS=host"}, code, "--user", "0:0")
	for _, want := range []string{"/x EROFS", "/etc/passwd EROFS", "/bin/sh EROFS", "/code/main.py EROFS"} {
		if !strings.Contains(res.Stdout, want+"\n") {
			t.Errorf("as 0:0 with --userns=host want %q in output:\n%s%s", want, res.Stdout, res.Stderr)
		}
	}
	// In its own user namespace, uid 0 owns the image's files (its root
	// is idmapped for it), and the mount refuses; it is not the host root
	// that owns /code: permissions refuse first there.
	res, _ = python(t, code, "--user", "0:0")
	for _, want := range []string{"/x EROFS", "/etc/passwd EROFS", "/bin/sh EROFS", "/code/main.py EACCES"} {
		if !strings.Contains(res.Stdout, want+"\n") {
			t.Errorf("as 0:0 want %q in output:\n%s%s", want, res.Stdout, res.Stderr)
		}
	}
	res, _ = python(t, code)
	if !strings.Contains(res.Stdout, "/x EROFS\n") || strings.Contains(res.Stdout, "WRITABLE") {
		t.Errorf("as 65534 want EROFS and nothing writable:\n%s%s", res.Stdout, res.Stderr)
	}
	assertClean(t)
}

func TestUserAndWorkspace(t *testing.T) {
	res, _ := python(t, `
import os
print(os.getuid(), os.getgid(), os.geteuid(), os.getgroups())
print(os.getcwd())
open("/workspace/out.txt", "w").write("x")
open("/tmp/t.txt", "w").write("y")
import socket; print(socket.gethostname())
`)
	want := "65534 65534 65534 []\n/workspace\nboxer\n"
	if res.Stdout != want {
		t.Errorf("stdout = %q, want %q (stderr %q)", res.Stdout, want, res.Stderr)
	}
	res, _ = python(t, `import os; print(os.getuid(), os.getgid())`, "--user", "1000:1000")
	if res.Stdout != "1000 1000\n" {
		t.Errorf("--user 1000:1000: stdout = %q", res.Stdout)
	}
	assertClean(t)
}

func TestNetworkIsolated(t *testing.T) {
	// A service on the host's loopback: the sandbox's 127.0.0.1 is its own.
	port := hostService(t)
	res, _ := python(t, strings.ReplaceAll(`
import os, socket, errno, sys
print("ifaces", sorted(os.listdir("/sys/class/net")))
routes = open("/proc/net/route").read().splitlines()[1:]
print("routes", len(routes))
if routes:
    sys.exit("a route exists: refusing to try an outside address")
s = socket.socket()
s.settimeout(3)
try:
    s.connect(("127.0.0.1", PORT)); print("host loopback REACHED", s.recv(100))
except OSError as e:
    print("host loopback", errno.errorcode.get(e.errno, e))
# No route exists, so this fails in the kernel before any packet is made
# (192.0.2.1 is TEST-NET-1, reserved for documentation).
s = socket.socket()
try:
    s.connect(("192.0.2.1", 80)); print("outside REACHED")
except OSError as e:
    print("outside", errno.errorcode.get(e.errno, e))
try:
    socket.getaddrinfo("deb.debian.org", 80); print("dns REACHED")
except OSError as e:
    print("dns", type(e).__name__)
`, "PORT", strconv.Itoa(port)))
	for _, want := range []string{"ifaces ['lo']", "routes 0", "host loopback ECONNREFUSED", "outside ENETUNREACH", "dns gaierror"} {
		if !strings.Contains(res.Stdout, want+"\n") {
			t.Errorf("want %q in output:\n%s%s", want, res.Stdout, res.Stderr)
		}
	}
	assertClean(t)
}

func TestSeccompDeniesWithEPERM(t *testing.T) {
	// x86-64 syscall numbers; each call would succeed or fail differently
	// without the filter (keyctl and unshare(CLONE_NEWUSER) work unprivileged).
	res, _ := python(t, `
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
calls = {
    "unshare(CLONE_NEWUSER)": (272, 0x10000000),
    "unshare(CLONE_NEWNS)": (272, 0x00020000),
    "mount": (165, 0, 0, 0, 0, 0),
    "keyctl": (250, 0, -3, 0),
    "add_key": (248, 0, 0, 0, 0, 0),
    "bpf": (321, 0, 0, 0),
    "ptrace": (101, 0, 0, 0, 0),
    "perf_event_open": (298, 0, 0, -1, -1, 0),
    "userfaultfd": (323, 0),
    "io_uring_setup": (425, 1, 0),
    "open_by_handle_at": (304, 0, 0, 0),
    "setns": (308, 0, 0),
    "kexec_load": (246, 0, 0, 0, 0),
    "init_module": (175, 0, 0, 0),
    "clone(CLONE_NEWUSER)": (56, 0x10000000 | 17, 0, 0, 0, 0),
    "chroot": (161, b"/tmp"),
    "pivot_root": (155, b"/tmp", b"/tmp"),
}
for name, (nr, *args) in calls.items():
    ctypes.set_errno(0)
    r = libc.syscall(nr, *args)
    e = ctypes.get_errno()
    print(name, "OK" if r >= 0 else errno.errorcode.get(e, e))
print("getpid", "OK" if libc.syscall(39) > 0 else "FAIL")
`)
	for _, name := range []string{"unshare(CLONE_NEWUSER)", "unshare(CLONE_NEWNS)", "mount", "keyctl", "add_key", "bpf", "ptrace", "perf_event_open", "userfaultfd", "io_uring_setup", "open_by_handle_at", "setns", "kexec_load", "init_module", "clone(CLONE_NEWUSER)", "chroot", "pivot_root"} {
		if !strings.Contains(res.Stdout, name+" EPERM\n") {
			t.Errorf("%s: want EPERM in output:\n%s%s", name, res.Stdout, res.Stderr)
		}
	}
	if !strings.Contains(res.Stdout, "getpid OK\n") {
		t.Errorf("an allowed syscall failed:\n%s%s", res.Stdout, res.Stderr)
	}
	assertClean(t)
}

func TestProcMaskedAndReadOnly(t *testing.T) {
	res, _ := python(t, `
import errno, os
for p in ["/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/kallsyms", "/proc/latency_stats"]:
    try:
        data = open(p, "rb").read(64)
        print(p, "len", len(data))
    except OSError as e:
        print(p, errno.errorcode[e.errno])
for p in ["/proc/sys/kernel/hostname", "/proc/sysrq-trigger", "/sys/kernel/mm/transparent_hugepage/enabled"]:
    try:
        open(p, "w").write("x"); print(p, "WRITTEN")
    except OSError as e:
        print(p, "write", errno.errorcode[e.errno])
print("devices", sorted(os.listdir("/dev")))
`)
	for _, p := range []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/kallsyms", "/proc/latency_stats"} {
		// Masked: /dev/null bound over it (empty) or not there at all.
		if !strings.Contains(res.Stdout, p+" len 0\n") && !strings.Contains(res.Stdout, p+" ENOENT\n") {
			t.Errorf("%s not masked:\n%s%s", p, res.Stdout, res.Stderr)
		}
	}
	for _, p := range []string{"/proc/sys/kernel/hostname", "/proc/sysrq-trigger", "/sys/kernel/mm/transparent_hugepage/enabled"} {
		if strings.Contains(res.Stdout, p+" WRITTEN") || !strings.Contains(res.Stdout, p+" write ") {
			t.Errorf("%s writable:\n%s%s", p, res.Stdout, res.Stderr)
		}
	}
	want := "devices ['fd', 'full', 'mqueue', 'null', 'ptmx', 'pts', 'random', 'shm', 'stderr', 'stdin', 'stdout', 'tty', 'urandom', 'zero']"
	if !strings.Contains(res.Stdout, want) {
		t.Errorf("unexpected device nodes:\n%s", res.Stdout)
	}
	assertClean(t)
}

func TestHostInvisible(t *testing.T) {
	marker := filepath.Join(os.TempDir(), "boxer-host-marker-"+strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(marker, []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(marker)
	code := `
import os
for p in ["MARKER", "SOCK", "/run/containerd", "/var/lib/boxer", "/root/.bashrc", "/proc/1/root/MARKER"]:
    print(p, os.path.exists(p))
print("pid1", open("/proc/1/cmdline").read().replace("\0", " ").strip())
print("parent", os.getppid(), "processes", len([p for p in os.listdir("/proc") if p.isdigit()]))
print("env", sorted(os.environ))
`
	code = strings.NewReplacer("MARKER", marker, "SOCK", filepath.Join(stateDir, "containerd.sock")).Replace(code)
	r := boxer(t, []string{"BOXER_HOST_SECRET=leak-me", "AWS_SECRET_ACCESS_KEY=leak-me"}, "run", "--lang", "python", "-c", code)
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if strings.HasSuffix(line, " True") {
			t.Errorf("host path visible: %s", line)
		}
	}
	if !strings.Contains(r.stdout, "pid1 /code/.boxer-init -- python3 -u /code/main.py\nparent 1 processes 2\n") {
		t.Errorf("pid 1 is not boxer-init with the program its only child:\n%s", r.stdout)
	}
	want := "env ['HOME', 'LANG', 'PATH', 'PYTHONDONTWRITEBYTECODE']"
	if !strings.Contains(r.stdout, want) {
		t.Errorf("environment = %s, want %s", lineWith(r.stdout, "env "), want)
	}
	if strings.Contains(r.stdout, "leak-me") {
		t.Errorf("host environment leaked:\n%s", r.stdout)
	}
	assertClean(t)
}

func lineWith(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// hostService serves a secret on the host's 127.0.0.1 until the test ends
// and returns its port: a sandbox must not reach it.
func hostService(t *testing.T) int { return secretService(t, "tcp", "127.0.0.1:0") }

// secretService listens on addr and answers every connection with a
// secret line; it returns the port.
func secretService(t *testing.T, network, addr string) int {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("host secret\n"))
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// hostServiceAny is a service on every address of the host (0.0.0.0),
// which only the egress rules keep a sandbox from.
func hostServiceAny(t *testing.T) int { return secretService(t, "tcp4", "0.0.0.0:0") }

// hostAddress is one of the host's own IPv4 addresses other than loopback
// and boxer's links.
func hostAddress(t *testing.T) string {
	t.Helper()
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagLoopback != 0 || strings.HasPrefix(ifc.Name, "bxn") {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
				return n.IP.String()
			}
		}
	}
	t.Fatal("the host has no IPv4 address besides loopback")
	return ""
}
