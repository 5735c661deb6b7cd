package server

// Error answers: the body every refusal carries, its status, and what of
// the request it may quote back.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/boxer-dev/boxer/internal/quote"
	"github.com/boxer-dev/boxer/runner"
)

// APIError is the body of every error answer: for a refusal of the
// request, the field at fault (or "body", "authorization") and what it
// accepts; see errorAnswer for the answers that name no field.
type APIError struct {
	Field   string `json:"field,omitempty"`
	Message string `json:"error"`
	// Limit and Max name the ceiling a 429 met, and its value.
	Limit string `json:"limit,omitempty"`
	Max   int    `json:"max,omitempty"`
}

func (e *APIError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + " " + e.Message
}

// requestStatus is the HTTP status of a request boxer will not run: 403
// when it asks for more than the operator permits, else 400.
func requestStatus(err error) int {
	var fe *runner.FieldError
	if errors.As(err, &fe) && fe.Forbidden {
		return http.StatusForbidden
	}
	return http.StatusBadRequest
}

// apiError turns an error about a request into its API answer.
func apiError(err error) *APIError {
	var ae *APIError
	var fe *runner.FieldError
	var ie *runner.ImageError
	var pe *runner.PathError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &fe):
		return &APIError{Field: fe.Field, Message: fe.Text(nil)}
	case errors.As(err, &pe):
		return &APIError{Field: pe.Field, Message: pe.Error()}
	case errors.As(err, &ie):
		return &APIError{Field: ie.Field(), Message: ie.Error()}
	}
	return &APIError{Field: "body", Message: err.Error()}
}

// errorAnswer is the body of an error answered with code. Only a refusal
// of the request names a field: a server fault (5xx) is no field's, nor
// is a full queue or session cap (429), nor a client gone (499).
func errorAnswer(code int, err error) *APIError {
	ae := apiError(err)
	// What the request put into the message (a path, a name) comes back
	// as a prefix, never whole.
	msg := quote.Message(ae.Message)
	var le *runner.LimitError
	if code == http.StatusTooManyRequests && errors.As(err, &le) {
		return &APIError{Message: msg, Limit: le.Limit, Max: le.Max}
	}
	if code >= 500 || code == http.StatusTooManyRequests || code == 499 {
		return &APIError{Message: msg}
	}
	return &APIError{Field: ae.Field, Message: msg}
}

func (s *Server) reject(w http.ResponseWriter, r *http.Request, code int, err error, rr *RunRequest) {
	s.metrics.rejected.WithLabelValues(strconv.Itoa(code)).Inc()
	ae := errorAnswer(code, err)
	s.audit.Write(s.entry(r, rr, code, ae.Error()))
	writeJSON(w, code, ae)
}

// decodeError names the field a JSON decoding error is about.
func decodeError(err error) *APIError {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		if typeErr.Field == "" {
			// The body itself is not an object ([], "x", 1).
			return &APIError{Field: "body", Message: "wrong type: want a JSON object"}
		}
		// The shared fields sit in the embedded Input struct, which
		// encoding/json names in the path; callers never see it.
		return &APIError{Field: strings.TrimPrefix(typeErr.Field, "Input."), Message: "wrong type: want " + typeErr.Type.String()}
	}
	msg := err.Error()
	// encoding/json reports unknown fields only as text.
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		if f = strings.Trim(f, `"`); f == "" {
			f = `""` // a key with no name: the field still needs one
		}
		return &APIError{Field: f, Message: "unknown field"}
	}
	if errors.Is(err, io.EOF) {
		return &APIError{Field: "body", Message: "empty body: want a JSON object"}
	}
	return &APIError{Field: "body", Message: "not valid JSON: " + msg}
}

// writeJSON answers v whole (with its length) and flushes it: a handler's
// deferred bookkeeping (Shutdown's count of runs in flight) must not let the
// server close the connection before the answer is out, which net/http
// would only send once the handler has returned.
func writeJSON(w http.ResponseWriter, code int, v any) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(body.Len()))
	w.WriteHeader(code)
	_, _ = w.Write(body.Bytes())
	_ = http.NewResponseController(w).Flush()
}
