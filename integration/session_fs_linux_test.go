package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/runner"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionFiles runs 'boxer session files ID ARGS' with stdin.
func sessionFiles(t *testing.T, stdin []byte, id string, args ...string) run {
	t.Helper()
	cmd := exec.Command(boxerBin, append([]string{"--namespace", namespace, "session", "files", id}, args...)...)
	cmd.Env = testEnv
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := run{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("session files %v: %v", args, err)
	}
	return r
}

// inSession runs bash in session id and returns its stdout, failing the
// test unless it exits 0.
func inSession(t *testing.T, id, code string) string {
	t.Helper()
	res, r := sessionCall(t, id, code)
	if res.ExitCode != 0 {
		t.Fatalf("call %q: %d %q %q %s", code, res.ExitCode, res.Stdout, res.Stderr, r.stderr)
	}
	return res.Stdout
}

// TestSessionFiles: files written from the host in /workspace, /tmp and
// /home/user (text and binary) are the sandbox's, and what the sandbox
// writes there the host reads, lists, stats, moves and removes; HOME is
// /home/user; a watch sees a file a call makes. On runc and runsc.
func TestSessionFiles(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			id := createSession(t, "--lang", "bash", "--runtime", rt, "--timeout", "20s")
			binary := []byte("\x00\x01\xff\xfebinary\n")
			files := map[string][]byte{"/workspace/a.txt": []byte("text in the workspace\n"), "/tmp/sub/b.bin": binary, "/home/user/c.txt": []byte("héllo home\n")}
			for p, data := range files {
				if r := sessionFiles(t, data, id, "write", p); r.code != 0 {
					t.Fatalf("write %s: %d %s", p, r.code, r.stderr)
				}
				if r := sessionFiles(t, nil, id, "cat", p); r.code != 0 || r.stdout != string(data) {
					t.Errorf("cat %s: %d %q %s, want %q", p, r.code, r.stdout, r.stderr, data)
				}
			}
			out := inSession(t, id, `echo $HOME; for f in /workspace/a.txt /tmp/sub/b.bin /home/user/c.txt; do sha256sum $f | cut -d' ' -f1; stat -c %u $f; done; stat -c '%u %a' /tmp/sub /home/user /tmp`)
			want := "/home/user\n"
			for _, p := range []string{"/workspace/a.txt", "/tmp/sub/b.bin", "/home/user/c.txt"} {
				want += sha256Hex(files[p]) + "\n65534\n"
			}
			want += "65534 755\n65534 755\n"
			if !strings.HasPrefix(out, want) || !strings.HasSuffix(out, " 1777\n") {
				t.Errorf("inside: %q, want %q then /tmp's owner and 1777", out, want)
			}
			// What the sandbox writes, the host lists and reads.
			inSession(t, id, `mkdir -p /tmp/d/e && printf made > /tmp/d/e/f && ln -s f /tmp/d/e/link && printf x > ~/.rc`)
			r := sessionFiles(t, nil, id, "ls", "/tmp/d", "--depth", "3", "--json")
			var entries []runner.FileEntry
			if r.code != 0 || json.Unmarshal([]byte(r.stdout), &entries) != nil {
				t.Fatalf("ls: %d %s %s", r.code, r.stdout, r.stderr)
			}
			var got []string
			for _, e := range entries {
				got = append(got, e.Path+" "+e.Type+" "+e.SymlinkTarget)
			}
			if strings.Join(got, ",") != "/tmp/d/e dir ,/tmp/d/e/f file ,/tmp/d/e/link symlink f" || entries[1].Size != 4 || entries[1].UID != 65534 || entries[1].Permissions != "-rw-r--r--" {
				t.Errorf("ls /tmp/d: %+v", entries)
			}
			if r := sessionFiles(t, nil, id, "cat", "/home/user/.rc"); r.stdout != "x" {
				t.Errorf("cat ~/.rc: %d %q %s", r.code, r.stdout, r.stderr)
			}
			// A symlink is followed inside its root.
			if r := sessionFiles(t, nil, id, "cat", "/tmp/d/e/link"); r.stdout != "made" {
				t.Errorf("cat through a symlink inside /tmp: %d %q %s", r.code, r.stdout, r.stderr)
			}
			r = sessionFiles(t, nil, id, "stat", "/tmp/d/e/link", "--json")
			var e runner.FileEntry
			if r.code != 0 || json.Unmarshal([]byte(r.stdout), &e) != nil || e.Type != "symlink" || e.SymlinkTarget != "f" || e.Name != "link" {
				t.Errorf("stat link: %d %s %s", r.code, r.stdout, r.stderr)
			}
			// mkdir, mv across roots, rm.
			if r := sessionFiles(t, nil, id, "mkdir", "/home/user/proj/src"); r.code != 0 {
				t.Fatalf("mkdir: %d %s", r.code, r.stderr)
			}
			if r := sessionFiles(t, nil, id, "mv", "/tmp/d/e/f", "/workspace/moved"); r.code != 0 {
				t.Fatalf("mv: %d %s", r.code, r.stderr)
			}
			if r := sessionFiles(t, nil, id, "rm", "/tmp/d"); r.code != 0 {
				t.Fatalf("rm: %d %s", r.code, r.stderr)
			}
			if out := inSession(t, id, `stat -c '%u %F' /home/user/proj/src; cat /workspace/moved; echo; ls /tmp`); out != "65534 directory\nmade\nsub\n" {
				t.Errorf("after mkdir, mv, rm: %q", out)
			}
			for _, c := range [][]string{{"cat", "/tmp/d/e/f"}, {"rm", "/tmp/nothing"}, {"ls", "/tmp/nothing"}} {
				if r := sessionFiles(t, nil, id, c...); r.code != 125 || !strings.Contains(r.stderr, "no such file") {
					t.Errorf("%v: %d %s, want 125 and no such file", c, r.code, r.stderr)
				}
			}
			// A watch sees what a call makes.
			watchSees(t, id, "/workspace")
		})
	}
}

// watchSees starts 'session files ID watch DIR --json' and makes files in
// DIR from inside until it tells one of them.
func watchSees(t *testing.T, id, dir string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, boxerBin, "--namespace", namespace, "session", "files", id, "watch", dir, "--json")
	cmd.Env = testEnv
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	defer func() { cancel(); _ = cmd.Wait() }()
	seen := make(chan FileEventLine, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var e FileEventLine
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				seen <- e
			}
		}
		close(seen)
	}()
	deadline := time.After(30 * time.Second)
	for i := 0; ; i++ {
		name := "watched-" + string(rune('a'+i%26))
		inSession(t, id, "echo hi > "+dir+"/"+name)
		select {
		case e, ok := <-seen:
			if !ok {
				t.Fatalf("watch ended: %s", stderr.String())
			}
			if e.Type != "create" && e.Type != "write" || !strings.HasPrefix(e.Path, dir+"/watched-") || e.Name != strings.TrimPrefix(e.Path, dir+"/") {
				t.Errorf("watch event: %+v", e)
			}
			return
		case <-time.After(time.Second):
		case <-deadline:
			t.Fatalf("the watch told nothing: %s", stderr.String())
		}
	}
}

// FileEventLine is a watch's line.
type FileEventLine struct {
	Type, Path, Name, Error string
}

// TestSessionFilesHostile: symlinks a session plants (to the host's
// /etc/passwd and a marker file, absolute and through ../.., a symlinked
// directory in the middle of a path, one into another root) and paths
// with .. never lead a file operation out of the session's roots: each is
// refused or stays inside, and no host file is read or written. A rename
// onto a symlink replaces the symlink. The size limit holds across /tmp
// and /home/user, from the host and from inside. On runc and runsc.
func TestSessionFilesHostile(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "marker")
	must(t, os.WriteFile(marker, []byte("host secret"), 0o644))
	before, _ := os.ReadFile("/etc/passwd")
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			id := createSession(t, "--lang", "bash", "--runtime", rt, "--timeout", "20s", "--tmp-size", "4m")
			up := strings.Repeat("../", 12)
			inSession(t, id, strings.Join([]string{
				"ln -s /etc/passwd /tmp/abs",
				"ln -s " + up + "etc/passwd /tmp/rel",
				"ln -s " + marker + " /tmp/marker",
				"ln -s " + up + strings.TrimPrefix(marker, "/") + " /workspace/mrel",
				"ln -s / /home/user/rootdir",
				"ln -s " + up + strings.TrimPrefix(filepath.Dir(marker), "/") + " /home/user/markerdir",
				"ln -s /tmp /workspace/tmpabs",
				"ln -s ../tmp /workspace/tmprel",
				"ln -s ../.. /workspace/up2",
				"mkdir /workspace/d && ln -s .. /workspace/d/up && echo inside > /workspace/in.txt",
				"ln -s " + marker + " /tmp/mlink",
				"echo src > /tmp/src",
			}, " && "))
			var refused []string
			// Reads aim at the host's /etc/passwd; whatever writes aims only
			// at the marker and its directory: a regression must not
			// damage the host it is found on.
			mdir := filepath.Dir(marker)
			for _, c := range [][]string{
				{"cat", "/tmp/abs"}, {"cat", "/tmp/rel"}, {"cat", "/tmp/marker"}, {"cat", "/workspace/mrel"},
				{"cat", "/home/user/rootdir/etc/passwd"}, {"cat", "/home/user/markerdir/marker"},
				{"cat", "/workspace/tmpabs/src"}, {"cat", "/workspace/tmprel/src"}, {"cat", "/workspace/up2/" + strings.TrimPrefix(marker, "/")},
				{"ls", "/home/user/rootdir"}, {"ls", "/home/user/rootdir/etc"}, {"ls", "/home/user/markerdir"}, {"ls", "/workspace/up2"}, {"ls", "/workspace/tmpabs"},
				{"stat", "/home/user/markerdir/marker"}, {"stat", "/home/user/rootdir/etc/passwd"},
				{"watch", "/home/user/markerdir"}, {"watch", "/home/user/rootdir/etc"},
				{"write", "/tmp/marker"}, {"write", "/workspace/mrel"}, {"write", "/home/user/markerdir/marker"},
				{"write", "/home/user/rootdir" + marker}, {"write", "/home/user/markerdir/new"}, {"write", "/workspace/up2/escape"},
				{"mkdir", "/home/user/markerdir/newdir"}, {"mkdir", "/home/user/rootdir" + mdir + "/newdir"},
				{"mv", "/tmp/src", "/home/user/markerdir/marker"}, {"mv", "/tmp/src", "/home/user/rootdir" + marker},
				{"mv", "/home/user/markerdir/marker", "/tmp/stolen"}, {"mv", "/home/user/rootdir" + marker, "/tmp/stolen"},
				{"rm", "/home/user/markerdir/marker"}, {"rm", "/home/user/rootdir" + marker},
				{"cat", "/tmp/../etc/passwd"}, {"cat", "/workspace/../../etc/passwd"}, {"cat", "/tmp/a/../../../etc/passwd"},
				{"write", "/workspace/../boxer-escape"}, {"mkdir", "/tmp/../../boxer-escape"}, {"ls", "/tmp/.."},
				{"cat", "tmp/abs"}, {"rm", "/tmp"}, {"mv", "/tmp", "/workspace/t"}, {"mv", "/tmp/src", "/home"},
			} {
				r := sessionFiles(t, []byte("PWNED"), id, c...)
				if r.code == 0 {
					t.Errorf("%v: succeeded, %q", c, r.stdout)
				} else if r.code != 125 || strings.Contains(r.stdout, "root:") || strings.Contains(r.stdout, "host secret") {
					t.Errorf("%v: %d %q %s", c, r.code, r.stdout, r.stderr)
				}
				refused = append(refused, strings.TrimSpace(r.stderr))
			}
			t.Logf("refusals: %q", refused)
			// Inside one root a symlink leads where the sandbox's would.
			if r := sessionFiles(t, nil, id, "cat", "/workspace/d/up/in.txt"); r.code != 0 || r.stdout != "inside\n" {
				t.Errorf("cat /workspace/d/up/in.txt: %d %q %s", r.code, r.stdout, r.stderr)
			}
			// A rename onto a symlink replaces the symlink itself.
			if r := sessionFiles(t, nil, id, "mv", "/tmp/src", "/tmp/mlink"); r.code != 0 {
				t.Errorf("mv onto a symlink: %d %s", r.code, r.stderr)
			}
			if out := inSession(t, id, "stat -c %F /tmp/mlink; cat /tmp/mlink"); out != "regular file\nsrc\n" {
				t.Errorf("after mv onto a symlink: %q", out)
			}
			if r := sessionFiles(t, nil, id, "rm", "/tmp/marker"); r.code != 0 {
				t.Errorf("rm a symlink: %d %s", r.code, r.stderr)
			}
			if data, err := os.ReadFile(marker); err != nil || string(data) != "host secret" {
				t.Errorf("host marker: %q %v", data, err)
			}
			if entries, _ := os.ReadDir(filepath.Dir(marker)); len(entries) != 1 {
				t.Errorf("the marker's directory holds %d entries, want 1", len(entries))
			}
			if after, _ := os.ReadFile("/etc/passwd"); !bytes.Equal(after, before) {
				t.Error("the host's /etc/passwd changed")
			}
			// The size limit holds for /tmp and /home/user together.
			if r := sessionFiles(t, bytes.Repeat([]byte("x"), 3<<20), id, "write", "/tmp/big"); r.code != 0 {
				t.Fatalf("write 3 MiB in /tmp: %d %s", r.code, r.stderr)
			}
			if r := sessionFiles(t, bytes.Repeat([]byte("y"), 2<<20), id, "write", "/home/user/big"); r.code != 125 || !strings.Contains(r.stderr, "full") {
				t.Errorf("write 2 MiB more in /home/user: %d %s, want 125 and full", r.code, r.stderr)
			}
			if r := sessionFiles(t, nil, id, "stat", "/home/user/big"); r.code != 125 {
				t.Errorf("a write that did not fit left %s", r.stdout)
			}
			if res, _ := sessionCall(t, id, "head -c 2M /dev/zero > /workspace/big"); res.ExitCode == 0 || !strings.Contains(res.Stderr, "No space left") {
				t.Errorf("2 MiB more inside: %d %q", res.ExitCode, res.Stderr)
			}
		})
	}
}

// TestSessionFilesHTTP: a session's files anywhere over HTTP, each answer
// checked against the OpenAPI document: write, read (also through the
// files route with an escaped absolute path), stat, list, mkdir, move,
// remove, a watch stream that tells a call's file, 400 naming path for a
// path outside, and 404 for a second caller's token. On runc and runsc.
func TestSessionFilesHTTP(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	a, b := "token-a-0123456789abcdef", "token-b-0123456789abcdef"
	must(t, os.WriteFile(tokens, []byte(a+"\n"+b+"\n"), 0o600))
	s := startServer(t, "--token-file", tokens)
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			code, data := sessionHTTP(t, s, a, "POST", "/v1/sessions", `{"lang":"bash","runtime":"`+rt+`"}`)
			var sess runner.Session
			if code != 201 || json.Unmarshal(data, &sess) != nil || sess.Runtime != rt {
				t.Fatalf("create: %d %s", code, data)
			}
			fs := "/v1/sessions/" + sess.ID + "/fs/"
			q := func(p string) string { return "?path=" + url.QueryEscape(p) }
			if code, data := sessionHTTP(t, s, a, "PUT", fs+"file"+q("/home/user/notes/n.bin"), "\x00\xffbytes"); code != 200 || !strings.Contains(string(data), `"type":"file"`) {
				t.Fatalf("put: %d %s", code, data)
			}
			if code, data := sessionHTTP(t, s, a, "GET", fs+"file"+q("/home/user/notes/n.bin"), ""); code != 200 || string(data) != "\x00\xffbytes" {
				t.Errorf("get: %d %q", code, data)
			}
			files := "/v1/sessions/" + sess.ID + "/files/" + url.PathEscape("/home/user/notes/n.bin")
			if code, data := sessionHTTP(t, s, a, "GET", files, ""); code != 200 || string(data) != "\x00\xffbytes" {
				t.Errorf("get through files/ with an absolute path: %d %q", code, data)
			}
			if code, data := sessionHTTP(t, s, a, "POST", fs+"mkdir", `{"path":"/tmp/x/y"}`); code != 201 {
				t.Errorf("mkdir: %d %s", code, data)
			}
			if code, data := sessionHTTP(t, s, a, "POST", fs+"mkdir", `{"path":"/tmp/x/y"}`); code != 200 {
				t.Errorf("mkdir again: %d %s", code, data)
			}
			if code, data := sessionHTTP(t, s, a, "POST", fs+"move", `{"from":"/home/user/notes/n.bin","to":"/tmp/x"}`); code != 400 || !strings.Contains(string(data), `"field":"to"`) {
				t.Errorf("move a file onto a directory: %d %s, want 400 naming to", code, data)
			}
			if code, data := sessionHTTP(t, s, a, "POST", fs+"move", `{"from":"/home/user/notes/n.bin","to":"/tmp/x/y/n.bin"}`); code != 200 || !strings.Contains(string(data), `"path":"/tmp/x/y/n.bin"`) {
				t.Errorf("move: %d %s", code, data)
			}
			code, data = sessionHTTP(t, s, a, "GET", fs+"list"+q("/tmp/x")+"&depth=2", "")
			var list struct{ Entries []runner.FileEntry }
			if code != 200 || json.Unmarshal(data, &list) != nil || len(list.Entries) != 2 || list.Entries[1].Path != "/tmp/x/y/n.bin" || list.Entries[1].Size != 7 {
				t.Errorf("list: %d %s", code, data)
			}
			if code, data := sessionHTTP(t, s, a, "GET", fs+"stat"+q("/home/user"), ""); code != 200 || !strings.Contains(string(data), `"type":"dir"`) {
				t.Errorf("stat: %d %s", code, data)
			}
			if code, data := sessionHTTP(t, s, a, "POST", fs+"remove", `{"path":"/tmp/x"}`); code != 204 {
				t.Errorf("remove: %d %s", code, data)
			}
			if code, data := sessionHTTP(t, s, a, "GET", fs+"stat"+q("/tmp/x"), ""); code != 404 || !strings.Contains(string(data), `"field":"path"`) {
				t.Errorf("stat of what was removed: %d %s", code, data)
			}
			for _, p := range []string{"/etc/passwd", "/tmp/../etc", "relative"} {
				code, data := sessionHTTP(t, s, a, "GET", fs+"stat"+q(p), "")
				if code != 400 || !strings.Contains(string(data), `"field":"path"`) {
					t.Errorf("stat %s: %d %s, want 400 naming path", p, code, data)
				}
			}
			// The watch: start, then the call's file.
			req := sessionRequest(a, "GET", s.url+fs+"watch"+q("/workspace")+"&recursive=true", "")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			resp, err := s.client.Do(req.WithContext(ctx))
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("watch: %v %v", resp, err)
			}
			defer resp.Body.Close()
			lines := bufio.NewScanner(resp.Body)
			var first WatchLineT
			if !lines.Scan() || json.Unmarshal(lines.Bytes(), &first) != nil || first.Type != "start" {
				t.Fatalf("watch's first line: %q", lines.Text())
			}
			if code, data := sessionHTTP(t, s, a, "POST", "/v1/sessions/"+sess.ID+"/runs", `{"code":"mkdir -p sub && echo hi > sub/made"}`); code != 200 {
				t.Fatalf("run: %d %s", code, data)
			}
			var seen []string
			for lines.Scan() && !strings.Contains(strings.Join(seen, ","), "/workspace/sub/made") {
				var l WatchLineT
				must(t, json.Unmarshal(lines.Bytes(), &l))
				seen = append(seen, l.Type+" "+l.Path)
			}
			if !strings.Contains(strings.Join(seen, ","), "create /workspace/sub/made") {
				t.Errorf("watch lines: %q", seen)
			}
			cancel()
			// The other token: as if the session did not exist.
			for _, c := range []struct{ method, path, body string }{
				{"GET", fs + "file" + q("/tmp/a"), ""}, {"PUT", fs + "file" + q("/tmp/a"), "x"}, {"GET", fs + "stat" + q("/tmp"), ""},
				{"GET", fs + "list" + q("/tmp"), ""}, {"POST", fs + "mkdir", `{"path":"/tmp/b"}`}, {"POST", fs + "move", `{"from":"/tmp/a","to":"/tmp/b"}`},
				{"POST", fs + "remove", `{"path":"/tmp/a"}`}, {"GET", fs + "watch" + q("/tmp"), ""}, {"GET", files, ""},
			} {
				if code, data := sessionHTTP(t, s, b, c.method, c.path, c.body); code != 404 {
					t.Errorf("token b %s %s: %d %s", c.method, c.path, code, data)
				}
			}
			if code, data := sessionHTTP(t, s, a, "DELETE", "/v1/sessions/"+sess.ID, ""); code != 204 {
				t.Errorf("delete: %d %s", code, data)
			}
		})
	}
}

// WatchLineT is a watch stream's line.
type WatchLineT struct {
	Type, Path, Name, Error string
}

// TestSessionFilesMCP: write_file, read_file and list_files in a session
// made with create_session.
func TestSessionFilesMCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(boxerBin, "--namespace", namespace, "mcp", "--warm-size", "0")
	cmd.Env = testEnv
	c := mcp.NewClient(&mcp.Implementation{Name: "boxer-test", Version: "1"}, nil)
	session, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	// A failure halfway still ends the server, and its session with it.
	t.Cleanup(func() { session.Close(); _ = cmd.Wait() })
	call := func(name string, args map[string]any, out any) {
		t.Helper()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		data, _ := json.Marshal(res.StructuredContent)
		must(t, json.Unmarshal(data, out))
	}
	var sess runner.Session
	call("create_session", map[string]any{"lang": "python"}, &sess)
	var e runner.FileEntry
	call("write_file", map[string]any{"session_id": sess.ID, "path": "/home/user/plan.md", "content": "# plan\n"}, &e)
	if e.Path != "/home/user/plan.md" || e.Size != 7 {
		t.Errorf("write_file: %+v", e)
	}
	call("write_file", map[string]any{"session_id": sess.ID, "path": "data/raw.bin", "content_base64": "AP8="}, &e)
	var read struct {
		ContentBase64 string `json:"content_base64"`
	}
	var text struct{ Content string }
	call("read_file", map[string]any{"session_id": sess.ID, "path": "/home/user/plan.md"}, &text)
	call("read_file", map[string]any{"session_id": sess.ID, "path": "/workspace/data/raw.bin"}, &read)
	if text.Content != "# plan\n" || read.ContentBase64 != "AP8=" {
		t.Errorf("read_file: %+v %+v", text, read)
	}
	var list struct{ Entries []runner.FileEntry }
	call("list_files", map[string]any{"session_id": sess.ID, "depth": 2}, &list)
	if len(list.Entries) != 2 || list.Entries[1].Path != "/workspace/data/raw.bin" {
		t.Errorf("list_files: %+v", list.Entries)
	}
	var res result
	call("run_code", map[string]any{"session_id": sess.ID, "code": "print(open('/home/user/plan.md').read(), end='')"}, &res)
	if res.Stdout != "# plan\n" {
		t.Errorf("the sandbox reads %q", res.Stdout)
	}
	if r, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"session_id": sess.ID, "path": "/etc/passwd"}}); err == nil && !r.IsError {
		t.Errorf("read_file /etc/passwd: %+v", r)
	}
	must(t, session.Close())
	_ = cmd.Wait()
	assertClean(t)
}
