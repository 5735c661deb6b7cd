package integration

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
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
	if !slices.Equal(names, []string{"close_session", "create_session", "list_languages", "run_code"}) {
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
