package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/runner"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCP talks to 'boxer mcp' with the SDK's own client over the command's
// stdio, as an MCP host does.
func TestMCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(boxerBin, "--namespace", namespace, "mcp")
	cmd.Env = testEnv
	c := mcp.NewClient(&mcp.Implementation{Name: "boxer-test", Version: "1"}, nil)
	session, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	defer session.Close()

	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"close_session", "create_session", "exec_command", "kill_process", "list_files", "list_languages", "list_processes", "read_file", "run_code", "write_file"}) {
		t.Errorf("tools %v", names)
	}

	// boxer mcp keeps one python sandbox pre-created: the first call takes
	// it (it is gone after the call, and another is made).
	waitForTask(t)
	tasks, err := runTasks(ctx)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("want one pre-created sandbox: %v %v", tasks, err)
	}
	warmID := tasks[0]
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{
		"lang":    "python",
		"code":    "import sys\nprint(6 * 7, open('in.txt').read(), sys.stdin.read())",
		"files":   map[string]string{"in.txt": "from a file"},
		"stdin":   "from stdin",
		"timeout": "20s",
	}})
	if err != nil || res.IsError {
		t.Fatalf("run_code: %v %+v", err, res)
	}
	var out result
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, &out); err != nil || out.Stdout != "42 from a file from stdin\n" || out.Status != "exited" {
		t.Errorf("structured content %s", data)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(text, "exited with code 0") || !strings.Contains(text, "42 from a file from stdin") {
		t.Errorf("text summary %q", text)
	}
	// Taken, it has run the call's program and is stopped or removed; not
	// taken, it would still be waiting for a program.
	if c, err := client.LoadContainer(ctx, warmID); err == nil {
		if task, err := c.Task(ctx, nil); err == nil {
			if st, err := task.Status(ctx); err == nil && st.Status == containerd.Running {
				t.Errorf("the call did not take the pre-created sandbox %s", warmID)
			}
		}
	}

	// A program's failure is a result; a bad call is a tool error.
	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"lang": "python", "code": "while True: pass", "timeout": "1s"}})
	if err != nil || res.IsError {
		t.Fatalf("timeout run: %v %+v", err, res)
	}
	data, _ = json.Marshal(res.StructuredContent)
	if json.Unmarshal(data, &out) != nil || out.Status != "timeout" {
		t.Errorf("timeout run: %s", data)
	}
	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"lang": "cobol", "code": "1"}})
	if err != nil || !res.IsError {
		t.Errorf("unknown language: %v %+v", err, res)
	}

	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "list_languages"})
	if err != nil {
		t.Fatal(err)
	}
	data, _ = json.Marshal(res.StructuredContent)
	for _, lang := range []string{"python", "python-data", "javascript", "typescript", "bash"} {
		if !strings.Contains(string(data), `"name":"`+lang+`"`) {
			t.Errorf("list_languages lacks %s: %s", lang, data)
		}
	}
	session.Close()
	assertClean(t)
}

// reply is a JSON-RPC response as boxer mcp writes it.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Error  *jsonrpc.Error  `json:"error"`
	Result struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	} `json:"result"`
}

// TestMCPOverLimit: over 'boxer mcp”s stdio, written by hand so that the
// order is known, a 20 MiB run_code call (over the 16 MiB limit a message)
// and a call right behind it in the same write: the first is answered with
// an Invalid Request error carrying its id, the second is answered, and the
// session made before goes on with its state.
func TestMCPOverLimit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(boxerBin, "--namespace", namespace, "mcp", "--warm-size", "0")
	cmd.Env = testEnv
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	must(t, err)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	must(t, err)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	replies := make(chan reply)
	done := make(chan struct{})
	var waitErr error
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r reply
			if json.Unmarshal(sc.Bytes(), &r) != nil || r.Method != "" {
				continue
			}
			select {
			case replies <- r:
			case <-ctx.Done():
			}
		}
		close(replies)
		waitErr = cmd.Wait()
		close(done)
	}()
	// Ended as a host ends it, boxer mcp ends its sessions; killed, it
	// would leave them to the next reaper.
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-done:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	fatal := func(format string, args ...any) {
		t.Helper()
		select { // the last words of a boxer mcp that is ending
		case <-done:
		case <-time.After(5 * time.Second):
		}
		log, _ := os.ReadFile(stderr.Name())
		t.Fatalf("%s\nboxer mcp's stderr:\n%s", fmt.Sprintf(format, args...), log)
	}
	write := func(data []byte) {
		t.Helper()
		if _, err := stdin.Write(data); err != nil {
			fatal("writing %d bytes: %v", len(data), err)
		}
	}
	message := func(id int, method string, params any) []byte {
		data, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		must(t, err)
		return append(data, '\n')
	}
	runCode := func(id int, args map[string]any) []byte {
		return message(id, "tools/call", map[string]any{"name": "run_code", "arguments": args})
	}
	early := map[string]reply{}
	await := func(id int) reply {
		t.Helper()
		for {
			if r, ok := early[fmt.Sprint(id)]; ok {
				return r
			}
			select {
			case r, ok := <-replies:
				if !ok {
					fatal("boxer mcp ended before answering call %d", id)
				}
				early[string(r.ID)] = r
			case <-ctx.Done():
				fatal("no answer to call %d", id)
			}
		}
	}
	stdoutOf := func(id int) string {
		t.Helper()
		r := await(id)
		var out result
		if r.Error != nil || r.Result.IsError || json.Unmarshal(r.Result.StructuredContent, &out) != nil {
			fatal("call %d: %+v %s", id, r.Error, r.Result.StructuredContent)
		}
		return out.Stdout
	}

	write(message(1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "boxer-test", "version": "1"}}))
	if r := await(1); r.Error != nil {
		fatal("initialize: %+v", r.Error)
	}
	write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
	write(message(2, "tools/call", map[string]any{"name": "create_session", "arguments": map[string]any{"lang": "python"}}))
	r := await(2)
	var sess runner.Session
	if r.Error != nil || r.Result.IsError || json.Unmarshal(r.Result.StructuredContent, &sess) != nil || sess.ID == "" {
		fatal("create_session: %+v %s", r.Error, r.Result.StructuredContent)
	}
	write(runCode(3, map[string]any{"session_id": sess.ID, "code": "x = 41"}))
	stdoutOf(3)

	big := runCode(4, map[string]any{"session_id": sess.ID, "code": "print(len(open('big.txt').read()))",
		"files": map[string]string{"big.txt": strings.Repeat("a", 20<<20)}})
	write(append(big, runCode(5, map[string]any{"session_id": sess.ID, "code": "print(x + 1)"})...))
	if r := await(4); r.Error == nil || r.Error.Code != jsonrpc.CodeInvalidRequest || !strings.Contains(r.Error.Message, "16 MiB") {
		fatal("20 MiB call: %+v %s, want an Invalid Request error naming the limit", r.Error, r.Result.StructuredContent)
	}
	if got := stdoutOf(5); got != "42\n" {
		t.Errorf("call behind the 20 MiB one: stdout %q, want %q", got, "42\n")
	}
	write(runCode(6, map[string]any{"session_id": sess.ID, "code": "print(x * 2)"}))
	if got := stdoutOf(6); got != "82\n" {
		t.Errorf("call in the session after: stdout %q, want %q", got, "82\n")
	}

	must(t, stdin.Close())
	select {
	case <-done:
		if waitErr != nil {
			fatal("boxer mcp: %v", waitErr)
		}
	case <-ctx.Done():
		fatal("boxer mcp did not end when its stdin closed")
	}
	assertClean(t)
}
