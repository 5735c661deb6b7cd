package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"image/png"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/runner"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// plotProgram saves a 400x300 plot (4 x 3 inches at 100 dpi), a file too
// large for the tests' cap, and a symlink to a host-looking file; it reads
// the binary file given in base64 and prints its digest.
const plotProgram = `
import hashlib, os, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig = plt.figure(figsize=(4, 3), dpi=100)
plt.plot([0, 1, 2], [0, 1, 4])
fig.savefig("plot.png")
os.makedirs("out", exist_ok=True)
open("out/big.csv", "w").write("x" * 300000)
os.symlink("/etc/passwd", "passwd.png")
print(hashlib.sha256(open("blob.bin", "rb").read()).hexdigest())
`

// blob is every byte value: binary files in must arrive intact.
var blob = func() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}()

// checkPlot decodes a returned PNG and checks its size.
func checkPlot(t *testing.T, data []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("plot.png does not decode as a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 400 || b.Dy() != 300 {
		t.Errorf("plot.png is %dx%d, want 400x300", b.Dx(), b.Dy())
	}
}

// TestReturnFilesHTTP: over HTTP, a plot comes back as base64 in the
// result; a file past the cap is listed truncated, without content; a
// symlink is not followed; a binary file goes in through files_base64.
func TestReturnFilesHTTP(t *testing.T) {
	s := startServer(t, "--max-return-bytes", "200k")
	body, _ := json.Marshal(map[string]any{
		"lang": "python-data", "code": plotProgram, "memory": "512m", "timeout": "60s",
		"files_base64": map[string]string{"blob.bin": base64.StdEncoding.EncodeToString(blob)},
		"return_files": []string{"*.png", "out/*.csv"},
	})
	code, _, resp := s.post(t, string(body))
	var res result
	if err := json.Unmarshal(resp, &res); err != nil || code != 200 {
		t.Fatalf("%d %s", code, resp)
	}
	sum := sha256.Sum256(blob)
	if res.ExitCode != 0 || res.Stdout != hex.EncodeToString(sum[:])+"\n" {
		t.Fatalf("program: exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	files := map[string]runner.ReturnedFile{}
	for _, f := range res.Files {
		files[f.Path] = f
	}
	if len(res.Files) != 2 {
		t.Errorf("files %d, want plot.png and out/big.csv (not the symlink)", len(res.Files))
	}
	plot := files["plot.png"]
	if plot.MediaType != "image/png" || plot.Truncated || plot.Size != int64(len(plot.Content)) {
		t.Errorf("plot.png: %s %d truncated %v", plot.MediaType, plot.Size, plot.Truncated)
	}
	checkPlot(t, plot.Content)
	if big := files["out/big.csv"]; !big.Truncated || big.Content != nil || big.Size != 300000 {
		t.Errorf("out/big.csv over the cap: truncated %v, %d bytes of content, size %d", big.Truncated, len(big.Content), big.Size)
	}
	code, _, resp = s.post(t, `{"lang":"python","code":"1","return_files":["../etc/*"]}`)
	if code != 400 || !strings.Contains(string(resp), `"field":"return_files"`) {
		t.Errorf("a glob outside /workspace: %d %s", code, resp)
	}
	code, _, resp = s.postInvalid(t, `{"lang":"python","code":"1","files_base64":{"a":"not base64!"}}`)
	if code != 400 || !strings.Contains(string(resp), `"field":"files_base64"`) {
		t.Errorf("bad base64: %d %s", code, resp)
	}
	s.stop(t)
	assertClean(t)
}

// TestReturnFilesMCP: over MCP (the SDK's client on the command's stdio),
// a plot comes back as an image content block the model can see, a text
// file as an embedded resource, and the structured result lists the files
// without their bytes.
func TestReturnFilesMCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(boxerBin, "--namespace", namespace, "mcp", "--warm", "")
	cmd.Env = testEnv
	c := mcp.NewClient(&mcp.Implementation{Name: "boxer-test", Version: "1"}, nil)
	session, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{
		"lang": "python-data", "code": plotProgram + "\nopen('notes.txt', 'w').write('mean 1.67\\n')\n",
		"memory": "512m", "timeout": "60s",
		"files_base64": map[string]string{"blob.bin": base64.StdEncoding.EncodeToString(blob)},
		"return_files": []string{"*.png", "*.txt"},
	}})
	if err != nil || res.IsError {
		t.Fatalf("run_code: %v %+v", err, res)
	}
	var images, texts int
	for _, block := range res.Content {
		switch b := block.(type) {
		case *mcp.ImageContent:
			images++
			if b.MIMEType != "image/png" {
				t.Errorf("image block of type %s", b.MIMEType)
			}
			checkPlot(t, b.Data)
		case *mcp.EmbeddedResource:
			texts++
			if b.Resource.URI != "file:///workspace/notes.txt" || b.Resource.Text != "mean 1.67\n" {
				t.Errorf("resource %s %q", b.Resource.URI, b.Resource.Text)
			}
		}
	}
	if images != 1 || texts != 1 {
		t.Errorf("%d image and %d resource blocks, want 1 and 1", images, texts)
	}
	var out result
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, &out); err != nil || len(out.Files) != 2 || out.Files[0].Content != nil || out.Files[1].Content != nil {
		t.Errorf("structured result files %+v", out.Files)
	}
	session.Close()
	assertClean(t)
}
