package integration

// The tests' HTTP calls to boxer serve, each checked against the OpenAPI
// document the server serves (server/openapi.json).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"testing"

	boxerserver "github.com/boxer-dev/boxer/server"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// ndjson is the media type of a streamed answer.
const ndjson = "application/x-ndjson"

// terse: a mismatch names the value's place and the rule it breaks, not
// the whole schema.
var terse = []openapi3.SchemaValidationOption{openapi3.DisableSchemaErrorDetails()}

var apiDoc = sync.OnceValues(func() (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(boxerserver.OpenAPI)
	if err != nil {
		return nil, fmt.Errorf("loading server/openapi.json: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("server/openapi.json is not a valid OpenAPI document: %w", err)
	}
	return doc, nil
})

// apiClient is the HTTP client of a test's calls to the server at url:
// every request and answer goes through an openAPITransport.
func apiClient(t testing.TB, url string) *http.Client {
	t.Helper()
	doc, err := apiDoc()
	if err != nil {
		t.Fatal(err)
	}
	// The document names the default --listen address; a test's server
	// listens on a port of its own.
	local := *doc
	local.Servers = openapi3.Servers{{URL: url}}
	router, err := gorillamux.NewRouter(&local)
	if err != nil {
		t.Fatalf("routing server/openapi.json: %v", err)
	}
	return &http.Client{Transport: &openAPITransport{t: t, router: router, base: http.DefaultTransport}}
}

// openAPITransport checks each request against the document before sending
// it (openapi3filter.ValidateRequest) and each answer on its way back
// (ValidateResponse: a declared status, media type, headers and body). A
// streamed answer (application/x-ndjson) is checked line by line as the
// test reads it, so its timing is the server's: each line but the last
// against the stream's schema, the last against the status's
// application/json schema (the result). A mismatch fails the test,
// naming the operation and the problem.
type openAPITransport struct {
	t      testing.TB
	router routers.Router
	base   http.RoundTripper
}

var _ http.RoundTripper = (*openAPITransport)(nil)

// invalidKey marks a request's context: see invalidRequest.
type invalidKey struct{}

// invalidRequest marks req as deliberately outside the document, to test
// a 4xx: it is sent without request validation (the document must refuse
// it too), and its answer is checked as any other.
func invalidRequest(req *http.Request) *http.Request {
	return req.WithContext(context.WithValue(req.Context(), invalidKey{}, true))
}

func (o *openAPITransport) RoundTrip(req *http.Request) (*http.Response, error) {
	data, err := readBody(req)
	if err != nil {
		return nil, err
	}
	out := req.Clone(req.Context())
	out.Body = bodyOf(data)
	route, params, err := o.router.FindRoute(req)
	if err != nil {
		o.t.Errorf("%s %s: no operation of server/openapi.json: %v", req.Method, req.URL.Path, err)
		return o.base.RoundTrip(out)
	}
	op := route.Operation.OperationID
	if op == "" {
		op = req.Method + " " + route.Path
	}
	in := &openapi3filter.RequestValidationInput{
		Request:    req.Clone(req.Context()),
		PathParams: params,
		Route:      route,
		Options:    &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true, SchemaValidationOptions: terse},
	}
	in.Request.Body = bodyOf(data)
	err = openapi3filter.ValidateRequest(req.Context(), in)
	switch invalid, _ := req.Context().Value(invalidKey{}).(bool); {
	case invalid && err == nil:
		o.t.Errorf("%s: a request sent as invalid is one the document accepts: %s %s %s", op, req.Method, req.URL.Path, abbrev(data))
	case !invalid && err != nil:
		o.t.Errorf("%s: request does not match server/openapi.json: %v", op, err)
	}

	resp, err := o.base.RoundTrip(out)
	if err != nil {
		return resp, err
	}
	res := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, SchemaValidationOptions: terse},
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == ndjson {
		o.streamed(op, res, resp)
		return resp, nil
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		// The answer was cut: the test sees that, nothing to check.
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(answer), errReader{err}))
		return resp, nil
	}
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	res.SetBodyBytes(answer)
	if err := openapi3filter.ValidateResponse(req.Context(), res); err != nil {
		o.t.Errorf("%s: %d answer does not match server/openapi.json: %v", op, resp.StatusCode, err)
	}
	return resp, nil
}

// streamed checks a streamed answer's status and headers now, and wraps
// its body to check its lines as they are read: the last against the
// status's application/json schema, if it declares one.
func (o *openAPITransport) streamed(op string, res *openapi3filter.ResponseValidationInput, resp *http.Response) {
	res.Options.ExcludeResponseBody = true
	if err := openapi3filter.ValidateResponse(res.RequestValidationInput.Request.Context(), res); err != nil {
		o.t.Errorf("%s: %d answer does not match server/openapi.json: %v", op, resp.StatusCode, err)
		return
	}
	declared := res.RequestValidationInput.Route.Operation.Responses.Status(resp.StatusCode)
	var events, last *openapi3.MediaType
	if declared != nil && declared.Value != nil {
		events, last = declared.Value.Content.Get(ndjson), declared.Value.Content.Get("application/json")
	}
	if last == nil {
		// A stream of one kind of line (a watch's): the last is one too.
		last = events
	}
	if events == nil || events.Schema == nil || last.Schema == nil {
		o.t.Errorf("%s: %d answer is %s: server/openapi.json declares no %s schema", op, resp.StatusCode, ndjson, ndjson)
		return
	}
	resp.Body = &ndjsonCheck{t: o.t, op: op, body: resp.Body, event: events.Schema.Value, last: last.Schema.Value}
}

// ndjsonCheck passes a streamed body through and checks each line once the
// next one (or the end) shows whether it is an event or the last.
type ndjsonCheck struct {
	t           testing.TB
	op          string
	body        io.ReadCloser
	event, last *openapi3.Schema
	partial     []byte
	held        []byte
	lines       int
	ended       bool
}

func (c *ndjsonCheck) Read(p []byte) (int, error) {
	n, err := c.body.Read(p)
	c.partial = append(c.partial, p[:n]...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		c.line(bytes.Clone(c.partial[:i]))
		c.partial = c.partial[i+1:]
	}
	if errors.Is(err, io.EOF) && !c.ended {
		c.ended = true
		if len(c.partial) > 0 {
			c.line(c.partial)
		}
		if c.held == nil {
			c.t.Errorf("%s: streamed answer with no line", c.op)
		} else {
			c.check(c.held, c.last, "last line")
		}
	}
	return n, err
}

func (c *ndjsonCheck) line(l []byte) {
	if c.held != nil {
		c.check(c.held, c.event, "event")
	}
	c.held = l
	c.lines++
}

func (c *ndjsonCheck) check(l []byte, s *openapi3.Schema, what string) {
	var v any
	if err := json.Unmarshal(l, &v); err != nil {
		c.t.Errorf("%s: streamed %s %q is not JSON: %v", c.op, what, l, err)
		return
	}
	if err := s.VisitJSON(v, append(terse, openapi3.VisitAsResponse(), openapi3.MultiErrors())...); err != nil {
		c.t.Errorf("%s: streamed %s %s does not match server/openapi.json: %v", c.op, what, abbrev(l), err)
	}
}

func (c *ndjsonCheck) Close() error { return c.body.Close() }

// readBody reads a request's body (nil: none), to send it and check it.
func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	defer req.Body.Close()
	return io.ReadAll(req.Body)
}

// bodyOf is a request body of data read by readBody.
func bodyOf(data []byte) io.ReadCloser {
	if data == nil {
		return http.NoBody
	}
	return io.NopCloser(bytes.NewReader(data))
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// abbrev is a line short enough for a failure message.
func abbrev(b []byte) string {
	if len(b) <= 200 {
		return string(b)
	}
	return fmt.Sprintf("%s... (%d bytes)", b[:200], len(b))
}
