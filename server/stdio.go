// The stdio transport of boxer mcp: a message over the limit is answered, not fatal.

package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxMCPMessageBytes is the largest JSON-RPC message (one line) boxer mcp
// reads on stdio, not counting its newline: the SDK's default line limit,
// so no message it took is refused. A longer line is read through to its
// newline, never held beyond its first MaxMCPMessageBytes, and answered
// with an Invalid Request error (code -32600) carrying the request's id;
// later messages are read as usual, so the client's connection and its
// sessions go on.
const MaxMCPMessageBytes = 16 << 20

// idWindow is how much of the start and of the end of a message over the
// limit is kept to find its id: the Go and Python SDKs write "id" near the
// start, the TypeScript SDK last.
const idWindow = 4 << 10

// StdioTransport is an mcp.Transport on stdin and stdout, as
// mcp.StdioTransport, that answers a message over MaxMCPMessageBytes with a
// JSON-RPC error instead of ending the connection.
type StdioTransport struct {
	// In and Out replace stdin and stdout when set. Out is not closed.
	In  io.ReadCloser
	Out io.Writer
}

// Connect implements mcp.Transport: the SDK's own newline-delimited
// connection, reading through a frameReader.
func (t *StdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	in, out := t.In, t.Out
	if in == nil {
		in = os.Stdin
	}
	if out == nil {
		out = os.Stdout
	}
	w := &syncWriter{w: out}
	r := newFrameReader(in, MaxMCPMessageBytes, func(id jsonrpc.ID, size int64) error {
		reply, err := tooLargeReply(id, size, MaxMCPMessageBytes)
		if err != nil {
			return err
		}
		_, err = w.Write(append(reply, '\n'))
		return err
	})
	// Every line the SDK gets is within the limit; its own cap stays as a
	// backstop for a message spread over several lines, which the MCP stdio
	// transport forbids.
	return (&mcp.IOTransport{Reader: r, Writer: w, MaxLineLength: 2 * MaxMCPMessageBytes}).Connect(ctx)
}

// syncWriter serializes writes to w: the SDK writes each message with one
// Write, under its own lock, and so does the reply to a message too large.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// Close leaves w open, as mcp.StdioTransport leaves stdout.
func (s *syncWriter) Close() error { return nil }

// tooLargeReply is the Invalid Request error answering a message of size
// bytes, over max, whose id is id (not valid if it could not be read).
func tooLargeReply(id jsonrpc.ID, size int64, max int) ([]byte, error) {
	data, err := json.Marshal(map[string]int64{"size": size, "max": int64(max)})
	if err != nil {
		return nil, err
	}
	werr := &jsonrpc.Error{
		Code: jsonrpc.CodeInvalidRequest,
		Message: fmt.Sprintf("request too large: %d bytes, over boxer mcp's limit of %d bytes (%d MiB) per message; "+
			"send large files in parts, over several run_code calls in one session, or through boxer serve (--max-body)", size, max, max>>20),
		Data: data,
	}
	if id.IsValid() {
		return jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: werr})
	}
	// EncodeMessage leaves out an id that is not valid, but JSON-RPC 2.0
	// (section 5) answers a request whose id cannot be read with "id": null.
	return json.Marshal(struct {
		Version string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", nil, werr})
}

// frameReader hands the SDK's decoder the client's stream a whole line at
// a time, each at most max bytes before its newline. A longer line is read
// through to its newline a buffer at a time and dropped, and refuse is
// called with its id and size; a failure of refuse ends the stream.
type frameReader struct {
	in     io.ReadCloser
	br     *bufio.Reader
	max    int
	refuse func(id jsonrpc.ID, size int64) error

	line []byte // the line being handed out, newline included
	off  int    // how much of line was handed out
	err  error  // what follows line

	head, tail []byte // the start and end of a line over max
}

func newFrameReader(in io.ReadCloser, max int, refuse func(jsonrpc.ID, int64) error) *frameReader {
	return &frameReader{
		in:     in,
		br:     bufio.NewReaderSize(in, 64<<10),
		max:    max,
		refuse: refuse,
		head:   make([]byte, 0, idWindow),
		tail:   make([]byte, 0, 2*idWindow),
	}
}

// Read implements io.Reader.
func (f *frameReader) Read(p []byte) (int, error) {
	for f.off == len(f.line) {
		if f.err != nil {
			return 0, f.err
		}
		f.line, f.err = f.next(f.line[:0])
		f.off = 0
	}
	n := copy(p, f.line[f.off:])
	f.off += n
	return n, nil
}

// Close closes the stream under f.
func (f *frameReader) Close() error { return f.in.Close() }

// next appends to buf the next line within max, refusing those over it.
func (f *frameReader) next(buf []byte) ([]byte, error) {
	for {
		chunk, err := f.br.ReadSlice('\n')
		buf = append(buf, chunk...)
		n := len(buf)
		if err == nil {
			n-- // the newline
		}
		if n > f.max {
			if err := f.drop(buf, err); err != nil {
				return nil, err
			}
			buf = buf[:0]
			continue
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return buf, err
		}
	}
}

// drop reads the rest of a line over max, whose start is buf and whose
// last read ended with err, keeping only its first and last idWindow bytes,
// and refuses it.
func (f *frameReader) drop(buf []byte, err error) error {
	size := int64(len(buf))
	f.head = append(f.head[:0], buf[:min(len(buf), idWindow)]...)
	f.tail = keepTail(f.tail[:0], buf)
	for errors.Is(err, bufio.ErrBufferFull) {
		var chunk []byte
		chunk, err = f.br.ReadSlice('\n')
		size += int64(len(chunk))
		f.tail = keepTail(f.tail, chunk)
	}
	switch {
	case err == nil:
		size-- // the newline
	case !errors.Is(err, io.EOF):
		return err
	}
	if rerr := f.refuse(messageID(f.head, f.tail), size); rerr != nil {
		return rerr
	}
	return err
}

// keepTail appends b to tail, whose capacity is at least 2*idWindow, and
// keeps the last idWindow bytes, without allocating.
func keepTail(tail, b []byte) []byte {
	if len(b) >= idWindow {
		return append(tail[:0], b[len(b)-idWindow:]...)
	}
	tail = append(tail, b...)
	if over := len(tail) - idWindow; over > 0 {
		tail = tail[:copy(tail, tail[over:])]
	}
	return tail
}

// messageID is the id of a JSON-RPC request whose message starts with head
// and ends with tail, or an id that is not valid if neither shows it.
func messageID(head, tail []byte) jsonrpc.ID {
	if id, ok := headID(head); ok {
		return id
	}
	id, _ := tailID(tail)
	return id
}

// headID reads the members of the object head starts, up to "id".
func headID(head []byte) (jsonrpc.ID, bool) {
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return jsonrpc.ID{}, false
	}
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return jsonrpc.ID{}, false
		}
		if key != "id" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return jsonrpc.ID{}, false
			}
			continue
		}
		var v any
		// A number at the very end of head may be cut short.
		if dec.Decode(&v) != nil || dec.InputOffset() == int64(len(head)) {
			return jsonrpc.ID{}, false
		}
		return validID(v)
	}
	return jsonrpc.ID{}, false
}

// tailID reads "id" among the last members of the object tail ends: from
// a key "id" after a comma or a brace, the rest of the line, with a brace
// before it, is one whole object only if the key is the outer object's
// (a member of an inner object leaves a brace too many).
func tailID(tail []byte) (jsonrpc.ID, bool) {
	tail = bytes.TrimRight(tail, " \t\r\n")
	key := []byte(`"id"`)
	for i := bytes.LastIndex(tail, key); i >= 0; i = bytes.LastIndex(tail[:i], key) {
		before := bytes.TrimRight(tail[:i], " \t\r\n")
		if len(before) == 0 || (before[len(before)-1] != ',' && before[len(before)-1] != '{') {
			continue
		}
		var m struct {
			ID any `json:"id"`
		}
		if json.Unmarshal(append([]byte{'{'}, tail[i:]...), &m) == nil {
			return validID(m.ID)
		}
	}
	return jsonrpc.ID{}, false
}

// validID is v as a request id, if it is one (a number or a string).
func validID(v any) (jsonrpc.ID, bool) {
	id, err := jsonrpc.MakeID(v)
	if err != nil || !id.IsValid() {
		return jsonrpc.ID{}, false
	}
	return id, true
}
