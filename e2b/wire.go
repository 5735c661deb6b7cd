package e2b

// What the E2B listener takes from a caller and hands on: bodies and
// messages within the server's --max-body, error answers that quote a
// request short, and a sandbox's ports without the caller's credentials.

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"connectrpc.com/connect"

	"github.com/boxer-dev/boxer/e2b/envdspec/process/processconnect"
	"github.com/boxer-dev/boxer/internal/quote"
)

// envelopeSlack is what a Connect stream's envelope adds to a message
// (a flag byte and a length): the body may be that much over the message
// cap, so that Connect itself refuses a message one byte over, naming it.
const envelopeSlack = 5

// credentialHeaders are the caller's credentials, which a request to a
// port inside the sandbox never carries in: the sandbox's code would hold
// the key to all its owner's sandboxes (X-API-Key, a bearer token) or to
// this one (the access tokens).
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "X-Api-Key", headerAccessToken, headerTrafficToken}

// tooLarge says what bounds a request body.
func tooLarge(limit int64) string {
	return fmt.Sprintf("the request body is larger than %d bytes, the server's --max-body", limit)
}

// isTooLarge says whether err is a body read past its http.MaxBytesReader.
func isTooLarge(err error) bool {
	var mb *http.MaxBytesError
	return errors.As(err, &mb)
}

// envdOptions are every envd Connect handler's: messages within the
// body cap, errors quoting a request short.
func (s *Server) envdOptions() []connect.HandlerOption {
	return []connect.HandlerOption{
		connect.WithReadMaxBytes(int(s.cfg.MaxBody)),
		connect.WithInterceptors(shortErrors{}),
	}
}

// capBody bounds a request's body at the server's --max-body before any
// handler reads it (Connect's own cap is on a message, decoded). A
// client stream (stdin) is a body of many messages over the process's
// life: each is capped by Connect, one at a time.
func (s *Server) capBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != processconnect.ProcessStreamInputProcedure {
			r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody+envelopeSlack)
		}
		next.ServeHTTP(w, r)
	})
}

// shortErrors cuts what an envd error quotes of its request (a path of
// megabytes answered with itself) to a prefix.
type shortErrors struct{}

func (shortErrors) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		res, err := next(ctx, req)
		return res, shortError(err)
	}
}

func (shortErrors) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (shortErrors) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		return shortError(next(ctx, conn))
	}
}

// shortError is err with its message quoted short, its code kept.
func shortError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	var ce *connect.Error
	if errors.As(err, &ce) {
		msg = ce.Message()
	}
	if short := quote.Message(msg); short != msg {
		return connect.NewError(connect.CodeOf(err), errors.New(short))
	}
	return err
}
