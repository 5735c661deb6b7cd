package integration

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/seccomp"
)

// Runtimes every hostile program runs on.
var runtimes = []string{"runc", "runsc"}

var updateSecurity = flag.Bool("update-security", false, "rewrite ../SECURITY.md from the hostile programs")

// hostile is one program of integration/hostile: a small file that tries
// one thing from inside the sandbox and prints "RESULT <what happened>".
type hostile struct {
	name, group, tries string
	expect             map[string]string // by runtime
	flags              []string
	code               string
}

func loadHostile(t *testing.T) []hostile {
	t.Helper()
	files, err := filepath.Glob("hostile/*.py")
	if err != nil || len(files) == 0 {
		t.Fatalf("no hostile programs: %v", err)
	}
	sort.Strings(files)
	var out []hostile
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h := hostile{name: strings.TrimSuffix(filepath.Base(f), ".py"), expect: map[string]string{}, code: string(data)}
		prelude := ""
		sc := bufio.NewScanner(strings.NewReader(h.code))
		for sc.Scan() {
			k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "# "), ": ")
			if !ok || !strings.HasPrefix(sc.Text(), "# ") {
				break
			}
			switch k {
			case "group":
				h.group = v
			case "tries":
				h.tries = v
			case "expect":
				for _, rt := range runtimes {
					if h.expect[rt] == "" {
						h.expect[rt] = v
					}
				}
			case "expect-runc", "expect-runsc":
				h.expect[strings.TrimPrefix(k, "expect-")] = v
			case "flags":
				h.flags = strings.Fields(v)
			case "uses":
				// A shared prelude (hostile/lib/NAME.py) goes in front.
				lib, err := os.ReadFile(filepath.Join("hostile", "lib", v+".py"))
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				prelude = string(lib)
			}
		}
		h.code = prelude + h.code
		if h.group == "" || h.tries == "" || len(h.expect) != len(runtimes) {
			t.Fatalf("%s: needs group, tries and expect headers", f)
		}
		out = append(out, h)
	}
	return out
}

// TestHostileSuite runs every hostile program on runc and on runsc and
// checks that it failed for the right reason: the errno, signal or limit
// its header names.
func TestHostileSuite(t *testing.T) {
	progs := loadHostile(t)
	if len(progs) < 60 {
		t.Errorf("%d hostile programs, want at least 60", len(progs))
	}
	port := hostService(t)
	marker := filepath.Join(os.TempDir(), "boxer-hostile-marker-"+strconv.Itoa(os.Getpid()))
	must(t, os.WriteFile(marker, []byte("host"), 0o644))
	defer os.Remove(marker)
	// For the egress programs: a service on every host address, one of
	// those addresses, and the fake internet as boxer's upstream.
	anyPort, hostIP := hostServiceAny(t), hostAddress(t)
	netEnv := egressEnv(internet(t))
	// Another tenant's sandbox, which no program may reach: one reached
	// fails and gets a new one for the next.
	var v *victim
	var repl *strings.Replacer
	newVictim := func() {
		v = startVictim(t)
		repl = strings.NewReplacer("{{HOST_PORT}}", strconv.Itoa(port), "{{MARKER}}", marker, "{{ANY_PORT}}", strconv.Itoa(anyPort), "{{HOST_IP}}", hostIP, "{{VICTIM_PID}}", strconv.Itoa(v.program()))
	}
	newVictim()

	for _, rt := range runtimes {
		for _, h := range progs {
			t.Run(rt+"/"+h.name, func(t *testing.T) {
				args := []string{"run", "--json", "--runtime", rt, "--lang", "python"}
				for _, f := range h.flags {
					args = append(args, repl.Replace(f))
				}
				r := boxer(t, append([]string{"BOXER_HOST_SECRET=leak-me"}, netEnv...), append(args, "-c", h.code)...)
				var res result
				if err := jsonUnmarshal(r.stdout, &res); err != nil {
					t.Fatalf("bad JSON (%v): %q %q", err, r.stdout, r.stderr)
				}
				// An expectation may list alternatives (a file some kernels lack).
				if got, want := outcome(res), h.expect[rt]; !slices.Contains(strings.Split(want, "|"), got) {
					t.Errorf("%s on %s: got %q, want %q (status %s exit %d, stderr %q)", h.name, rt, got, want, res.Status, res.ExitCode, tail(res.Stderr))
				}
				if !v.alive() {
					t.Errorf("%s on %s reached the victim sandbox: of its processes %v, %v are left", h.name, rt, v.pids, v.processes())
				}
			})
			if !v.alive() {
				newVictim()
			}
		}
	}
	v.stop(t)
	assertClean(t)
}

// outcome is what a hostile program's run came to: its RESULT line, or
// "status=S" (with "+truncated") when the sandbox's limits ended it.
func outcome(res result) string {
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		if v, ok := strings.CutPrefix(line, "RESULT "); ok {
			return v
		}
	}
	s := "status=" + res.Status
	if res.StdoutTruncated {
		s += "+truncated"
	}
	return s
}

func tail(s string) string {
	if len(s) > 300 {
		return "..." + s[len(s)-300:]
	}
	return s
}

// TestSecurityTable keeps SECURITY.md's generated blocks (the hostile
// programs with their expected results, and the seccomp profile against
// Docker's) equal to the code: go test ./integration -run TestSecurityTable
// -update-security rewrites them.
func TestSecurityTable(t *testing.T) {
	doc, err := os.ReadFile("../SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	for _, block := range []struct{ name, body string }{
		{"hostile table", hostileTable(loadHostile(t))},
		{"seccomp tables", seccompTables()},
	} {
		begin, end := "<!-- "+block.name+" begin -->\n", "<!-- "+block.name+" end -->"
		i, j := strings.Index(text, begin), strings.Index(text, end)
		if i < 0 || j < i {
			t.Fatalf("SECURITY.md has no %q markers", block.name)
		}
		if got := text[i+len(begin) : j]; got != block.body {
			if !*updateSecurity {
				t.Errorf("SECURITY.md's %s is out of date: run go test ./integration -run TestSecurityTable -update-security", block.name)
			}
			text = text[:i+len(begin)] + block.body + text[j:]
		}
	}
	if *updateSecurity {
		must(t, os.WriteFile("../SECURITY.md", []byte(text), 0o644))
	}
}

func hostileTable(progs []hostile) string {
	var b strings.Builder
	b.WriteString("| # | group | program | what it tries | runc | runsc |\n|---|---|---|---|---|---|\n")
	for i, h := range progs {
		flags := ""
		if len(h.flags) > 0 {
			flags = " (`" + strings.Join(h.flags, " ") + "`)"
		}
		fmt.Fprintf(&b, "| %d | %s | `%s` | %s%s | %s | %s |\n", i+1, h.group, h.name, h.tries, flags, strings.ReplaceAll(h.expect["runc"], "|", " or "), strings.ReplaceAll(h.expect["runsc"], "|", " or "))
	}
	return b.String()
}

func seccompTables() string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Allowed, as Docker allows them (%d):** %s", len(seccomp.Allowed()), codeList(seccomp.Allowed()))
	b.WriteString(".\n\n**Allowed with conditions:** `clone` without namespace flags; `personality` with the values Docker allows; `socket` for AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK only (Docker allows 30 address families); `arch_prctl` on x86-64. `clone3` answers ENOSYS, as in Docker.\n\n")
	fmt.Fprintf(&b, "**Allowed by Docker, refused by boxer (%d):**\n\n| syscall | why |\n|---|---|\n", len(seccomp.Refused()))
	for _, r := range seccomp.Refused() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", r.Name, r.Why)
	}
	fmt.Fprintf(&b, "\n**Refused by both, and never to be allowed by any boxer profile (%d):** %s", len(seccomp.Denied()), codeList(seccomp.Denied()))
	fmt.Fprintf(&b, ".\n\n**In Docker's list but not syscalls of x86-64 or arm64 (%d):** %s.\n", len(seccomp.Compat()), codeList(seccomp.Compat()))
	return b.String()
}

// codeList writes names as `a`, `b`, `c`.
func codeList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "`" + n + "`"
	}
	return strings.Join(quoted, ", ")
}
