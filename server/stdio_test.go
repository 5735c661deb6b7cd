package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// refusal is one call of a frameReader's refuse.
type refusal struct {
	id   any
	size int64
}

// readFrames reads in whole through a frameReader with limit max: what it
// hands on, and what it refused.
func readFrames(t *testing.T, in io.Reader, max int) (string, []refusal) {
	t.Helper()
	var refused []refusal
	f := newFrameReader(io.NopCloser(in), max, func(id jsonrpc.ID, size int64) error {
		refused = append(refused, refusal{id.Raw(), size})
		return nil
	})
	out, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("reading: %v", err)
	}
	return string(out), refused
}

func TestFrameReader(t *testing.T) {
	const max = 64
	pad := strings.Repeat("x", 100)
	idFirst := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"p":"` + pad + `"}}`
	idString := `{"jsonrpc":"2.0","method":"m","id":"a\"b","params":"` + pad + `"}`
	idLast := `{"method":"tools/call","params":{"id":1,"p":"` + pad + `"},"jsonrpc":"2.0","id":9}`
	idInside := `{"method":"m","params":{"p":"` + pad + `","id":1}}`
	idInString := `{"method":"m","params":"` + pad + `,\"id\":1}"}`
	notification := `{"jsonrpc":"2.0","method":"m","params":"` + pad + `"}`
	batch := `[{"jsonrpc":"2.0","id":1,"method":"m","params":"` + pad + `"}]`
	size := func(s string) int64 { return int64(len(s)) }
	tests := []struct {
		name    string
		in      string
		want    string
		refused []refusal
	}{
		{"within", "{\"a\":1}\n{\"b\":2}\n", "{\"a\":1}\n{\"b\":2}\n", nil},
		{"at the limit", strings.Repeat(" ", max) + "\n", strings.Repeat(" ", max) + "\n", nil},
		{"one over", strings.Repeat(" ", max+1) + "\n{}\n", "{}\n", []refusal{{nil, max + 1}}},
		{"id first", idFirst + "\n{}\n", "{}\n", []refusal{{int64(3), size(idFirst)}}},
		{"string id after members", idString + "\n", "", []refusal{{`a"b`, size(idString)}}},
		// The TypeScript SDK writes id last.
		{"id last", idLast + "\r\n{}\n", "{}\n", []refusal{{int64(9), size(idLast) + 1}}},
		{"id only inside", idInside + "\n", "", []refusal{{nil, size(idInside)}}},
		{"id in a string", idInString + "\n", "", []refusal{{nil, size(idInString)}}},
		{"notification", notification + "\n", "", []refusal{{nil, size(notification)}}},
		{"batch", batch + "\n", "", []refusal{{nil, size(batch)}}},
		{"not json", pad + "\n{}", "{}", []refusal{{nil, 100}}},
		{"over at the end", "{}\n" + pad, "{}\n", []refusal{{nil, 100}}},
		{"several", pad + "\n" + pad + "\n{}\n" + pad + "\n", "{}\n", []refusal{{nil, 100}, {nil, 100}, {nil, 100}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, refused := readFrames(t, strings.NewReader(tc.in), max)
			if got != tc.want {
				t.Errorf("handed on %q, want %q", got, tc.want)
			}
			if fmt.Sprint(refused) != fmt.Sprint(tc.refused) {
				t.Errorf("refused %v, want %v", refused, tc.refused)
			}
		})
	}
}

// TestFrameReaderCutID: an id that the kept start of a message cuts in two
// is not taken for another.
func TestFrameReaderCutID(t *testing.T) {
	prefix := `{"jsonrpc":"2.0","p":"` + strings.Repeat("x", idWindow-len(`{"jsonrpc":"2.0","p":"`)-len(`","id":12`)) + `","id":12`
	line := prefix + `345,"method":"m","params":"` + strings.Repeat("x", 2*idWindow) + "\"}\n"
	_, refused := readFrames(t, strings.NewReader(line), 64)
	if len(refused) != 1 || refused[0].id != nil {
		t.Errorf("refused %v, want one with no id", refused)
	}
}

// xs reads as n bytes of 'x' without holding them.
type xs struct{ n int64 }

func (r *xs) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.n)]
	for i := range p {
		p[i] = 'x'
	}
	r.n -= int64(len(p))
	return len(p), nil
}

// TestFrameReaderMemory: a 256 MiB line over a 1 MiB limit is read through
// in bounded memory, and the line after it is handed on.
func TestFrameReaderMemory(t *testing.T) {
	const max, big = 1 << 20, 256 << 20
	in := io.MultiReader(
		strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"code":"`),
		&xs{big},
		strings.NewReader("\"}}\n{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}\n"))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, refused := readFrames(t, in, max)
	runtime.ReadMemStats(&after)
	if got != `{"jsonrpc":"2.0","id":8,"method":"ping"}`+"\n" {
		t.Errorf("handed on %q", got)
	}
	if len(refused) != 1 || refused[0].id != int64(7) || refused[0].size < big {
		t.Errorf("refused %v, want id 7 of over %d bytes", refused, big)
	}
	// The line's first max bytes are buffered (as for a line within the
	// limit), never the whole.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("allocated %d MiB reading a %d MiB line", alloc>>20, big>>20)
	}
}

func TestTooLargeReply(t *testing.T) {
	tests := []struct {
		name string
		id   any
		want string
	}{
		{"number", float64(4), `"id":4`},
		{"string", "a", `"id":"a"`},
		{"unknown", nil, `"id":null`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, err := jsonrpc.MakeID(tc.id)
			if err != nil {
				t.Fatal(err)
			}
			data, err := tooLargeReply(id, 20<<20, MaxMCPMessageBytes)
			if err != nil {
				t.Fatal(err)
			}
			var reply struct {
				Version string          `json:"jsonrpc"`
				Error   *jsonrpc.Error  `json:"error"`
				Result  json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal(data, &reply); err != nil {
				t.Fatalf("%s: %v", data, err)
			}
			if !strings.Contains(string(data), tc.want) || reply.Version != "2.0" || reply.Result != nil || reply.Error == nil ||
				reply.Error.Code != jsonrpc.CodeInvalidRequest || !strings.Contains(reply.Error.Message, "16 MiB") {
				t.Errorf("reply %s, want an Invalid Request error with %s", data, tc.want)
			}
		})
	}
}

// TestStdioTransportOverLimit: the SDK's client sends a call over the
// limit and gets an Invalid Request error; its connection goes on.
func TestStdioTransportOverLimit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "len"}, func(_ context.Context, _ *mcp.CallToolRequest, in in) (*mcp.CallToolResult, struct{}, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(len(in.Text))}}}, struct{}{}, nil
	})
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ss, err := s.Connect(ctx, &StdioTransport{In: sr, Out: sw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	call := func(n int) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: "len", Arguments: in{strings.Repeat("x", n)}})
	}
	_, err = call(MaxMCPMessageBytes + 1<<20)
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidRequest || !strings.Contains(werr.Message, "limit") {
		t.Fatalf("call over the limit: %v, want an Invalid Request error", err)
	}
	for _, n := range []int{3, MaxMCPMessageBytes - 1<<10} {
		res, err := call(n)
		if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != fmt.Sprint(n) {
			t.Fatalf("call of %d bytes after: %v %+v", n, err, res)
		}
	}
}
