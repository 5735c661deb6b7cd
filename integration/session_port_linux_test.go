package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/runner"
)

// portForward runs 'boxer session port ID PORT' and returns the local
// address it prints; the test's cleanup ends it with SIGINT.
func portForward(t *testing.T, id, port string) string {
	t.Helper()
	cmd, out, errb := pipeBoxer(t, "session", "port", id, port)
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("session port %s %s: %s", id, port, errb.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Wait()
		t.Fatalf("session port %s %s: %v %s", id, port, err, errb.String())
	}
	return strings.TrimSpace(line)
}

// waitHTTP gets url until it answers 200 (a server starting) and returns
// its body.
func waitHTTP(t *testing.T, url string, header ...string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		req, _ := http.NewRequest("GET", url, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return string(data)
			}
			err = fmt.Errorf("%s: %s", resp.Status, data)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// watchedHostService listens on the host's 127.0.0.1 and answers "host secret"
// to whoever connects: a port a session's forward must never reach.
func watchedHostService(t *testing.T) (port int, reached func() bool) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { ln.Close() })
	hits := make(chan struct{}, 100)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case hits <- struct{}{}:
			default:
			}
			_, _ = io.WriteString(c, "HTTP/1.0 200 OK\r\n\r\nhost secret\n")
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, func() bool { return len(hits) > 0 }
}

// TestSessionPort: 'boxer session port' forwards a local port to a
// background http.server in the session; a port nothing listens on in
// the session closes the connection (and says why); a port a host service
// listens on (on the host's 127.0.0.1) is not reached through the
// session's forward of that number; rm leaves nothing. On runc and runsc.
func TestSessionPort(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			id := createSession(t, "--lang", "python", "--runtime", rt)
			if r := sessionExec(t, "", id, "--bg", "--tag", "web", "--cwd", "/workspace", "--", "sh", "-c", "echo served > index.txt; exec python3 -m http.server 8000"); r.code != 0 {
				t.Fatalf("starting the server: %d %s", r.code, r.stderr)
			}
			// Nothing listens on 8001 in the session: the connection closes.
			empty := portForward(t, id, "8001")
			if resp, err := http.Get("http://" + empty + "/"); err == nil {
				resp.Body.Close()
				t.Errorf("a port nothing listens on answered %s", resp.Status)
			}

			// The host's service is not the session's.
			hostPort, reached := watchedHostService(t)
			hostile := portForward(t, id, fmt.Sprint(hostPort))
			if resp, err := http.Get("http://" + hostile + "/"); err == nil {
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				t.Errorf("the host's port %d answered through the session: %s %q", hostPort, resp.Status, data)
			}
			if reached() {
				t.Errorf("the host's service on 127.0.0.1:%d was connected to through session %s", hostPort, id)
			}

			local := portForward(t, id, "8000")
			start := time.Now()
			if got := waitHTTP(t, "http://"+local+"/index.txt"); got != "served\n" {
				t.Errorf("through session port: %q, want \"served\"", got)
			}
			t.Logf("%s: first answer through the forward after %v", rt, time.Since(start))
			start = time.Now()
			for range 10 {
				waitHTTP(t, "http://"+local+"/index.txt")
			}
			t.Logf("%s: a request through the forward in %v", rt, time.Since(start)/10)

			if r := boxer(t, nil, "session", "port", id, "0"); r.code != runner.ExitBoxer || !strings.Contains(r.stderr, "PORT") {
				t.Errorf("port 0: %d %q, want %d naming PORT", r.code, r.stderr, runner.ExitBoxer)
			}
			if r := boxer(t, nil, "session", "port", "bxs-0000000000000000", "8000"); r.code != runner.ExitBoxer || !strings.Contains(r.stderr, "no session") {
				t.Errorf("no session: %d %q", r.code, r.stderr)
			}
			if r := boxer(t, nil, "session", "rm", id); r.code != 0 {
				t.Fatalf("rm: %d %s", r.code, r.stderr)
			}
			assertClean(t)
		})
	}
}

// TestSessionPortHTTP: /v1/sessions/{id}/ports/{port}/... proxies to a
// background http.server of the session, for its owner only (another
// token: 404); the caller's token is not passed on; a streamed answer
// comes as it is written, an upgraded connection both ways; a port nothing listens on is a 502 that says
// so, and the host's service on that port number is not reached. On runc
// and runsc.
func TestSessionPortHTTP(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			tokens := filepath.Join(t.TempDir(), "tokens")
			a, b := "token-a-0123456789abcdef", "token-b-0123456789abcdef"
			must(t, os.WriteFile(tokens, []byte(a+"\n"+b+"\n"), 0o600))
			s := startServer(t, "--token-file", tokens)
			code, data := sessionHTTP(t, s, a, "POST", "/v1/sessions", `{"lang":"python","runtime":"`+rt+`"}`)
			var sess runner.Session
			if code != 201 || json.Unmarshal(data, &sess) != nil {
				t.Fatalf("create: %d %s", code, data)
			}
			// A server that echoes the request's headers, and streams.
			srv := `import http.server, time
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        if self.headers.get("Upgrade") == "echo":
            self.send_response(101)
            self.send_header("Upgrade", "echo")
            self.send_header("Connection", "Upgrade")
            self.end_headers()
            while True:
                b = self.rfile.read1(4096)
                if not b:
                    break
                self.wfile.write(b)
            self.close_connection = True
            return
        if self.path.startswith("/stream"):
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(3):
                line = b"tick %d\n" % i
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
                time.sleep(0.5)
            self.wfile.write(b"0\r\n\r\n")
            return
        body = ("path=%s auth=%s" % (self.path, self.headers.get("Authorization"))).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(n)
        self.send_response(201)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.ThreadingHTTPServer(("127.0.0.1", 8000), H).serve_forever()`
			code, data = sessionHTTP(t, s, a, "POST", "/v1/sessions/"+sess.ID+"/processes", string(mustJSON(map[string]any{"args": []string{"python3", "-c", srv}, "tag": "web"})))
			if code != 201 {
				t.Fatalf("starting the server: %d %s", code, data)
			}
			// Nothing listens there: 502 saying so; the host's service on
			// that number is not reached.
			hostPort, reached := watchedHostService(t)
			for _, port := range []string{"8001", fmt.Sprint(hostPort)} {
				req, _ := http.NewRequest("GET", s.url+"/v1/sessions/"+sess.ID+"/ports/"+port+"/", nil)
				req.Header.Set("Authorization", "Bearer "+a)
				resp, err := http.DefaultClient.Do(req)
				must(t, err)
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 502 || !strings.Contains(string(data), "nothing answers on port "+port) {
					t.Errorf("port %s: %s %s, want 502 saying nothing answers", port, resp.Status, data)
				}
			}
			if reached() {
				t.Errorf("the host's service on 127.0.0.1:%d was connected to through session %s", hostPort, sess.ID)
			}
			base := s.url + "/v1/sessions/" + sess.ID + "/ports/8000"
			got := waitHTTP(t, base+"/some/path?q=1", "Authorization", "Bearer "+a)
			if got != "path=/some/path?q=1 auth=None" {
				t.Errorf("proxied GET: %q, want the path and no Authorization", got)
			}
			req, _ := http.NewRequest("POST", base+"/echo", strings.NewReader("posted body"))
			req.Header.Set("Authorization", "Bearer "+a)
			resp, err := http.DefaultClient.Do(req)
			must(t, err)
			data, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 201 || string(data) != "posted body" {
				t.Errorf("proxied POST: %s %q", resp.Status, data)
			}

			// A streamed answer: its first line before its end.
			req, _ = http.NewRequest("GET", base+"/stream", nil)
			req.Header.Set("Authorization", "Bearer "+a)
			start := time.Now()
			resp, err = http.DefaultClient.Do(req)
			must(t, err)
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			first := time.Since(start)
			rest, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || line != "tick 0\n" || first > 900*time.Millisecond || !strings.Contains(string(rest), "tick 2") {
				t.Errorf("stream: %q after %v (%v), then %q", line, first, err, rest)
			}

			// An upgraded connection (as a websocket's) is passed through.
			conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
			must(t, err)
			defer conn.Close()
			must(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
			fmt.Fprintf(conn, "GET /v1/sessions/%s/ports/8000/ws HTTP/1.1\r\nHost: boxer\r\nAuthorization: Bearer %s\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n", sess.ID, a)
			br := bufio.NewReader(conn)
			resp, err = http.ReadResponse(br, nil)
			must(t, err)
			if resp.StatusCode != 101 {
				t.Errorf("upgrade: %s, want 101", resp.Status)
			}
			_, err = io.WriteString(conn, "ping\n")
			must(t, err)
			if line, err := br.ReadString('\n'); line != "ping\n" {
				t.Errorf("upgraded connection: %q %v, want the echo", line, err)
			}
			conn.Close()

			// Another token: 404, as for every route of a session it does
			// not own.
			req, _ = http.NewRequest("GET", base+"/", nil)
			req.Header.Set("Authorization", "Bearer "+b)
			resp, err = http.DefaultClient.Do(req)
			must(t, err)
			data, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 404 || strings.Contains(string(data), "path=") {
				t.Errorf("another token: %s %s, want 404", resp.Status, data)
			}

			req, _ = http.NewRequest("GET", s.url+"/v1/sessions/"+sess.ID+"/ports/70000/", nil)
			req.Header.Set("Authorization", "Bearer "+a)
			resp, err = http.DefaultClient.Do(req)
			must(t, err)
			data, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 400 || !strings.Contains(string(data), `"port"`) {
				t.Errorf("port 70000: %s %s, want 400 naming port", resp.Status, data)
			}

			if code, data := sessionHTTP(t, s, a, "DELETE", "/v1/sessions/"+sess.ID, ""); code != 204 {
				t.Fatalf("rm: %d %s", code, data)
			}
			s.stop(t)
			assertClean(t)
		})
	}
}
