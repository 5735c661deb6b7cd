package server

import (
	"cmp"
	"context"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxer-dev/boxer/audit"
	"github.com/boxer-dev/boxer/fault"
	"github.com/boxer-dev/boxer/fleet"
	"github.com/boxer-dev/boxer/runner"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// OpenAPI is the API's description, served at GET /v1/openapi.json.
//
//go:embed openapi.json
var OpenAPI []byte

// Config sets the server's limits on callers.
type Config struct {
	// Concurrency is how many sandboxes run at once.
	Concurrency int
	// Queue is how many requests may wait for a slot; beyond, 429.
	Queue int
	// MaxBody bounds a request body; beyond, 413.
	MaxBody int64
	// Token, if set, is required as "Authorization: Bearer <token>".
	Token string
	// Audit receives one line per request and per session event; may
	// be nil.
	Audit *audit.Log
	// Max caps the limits a request may ask for; Sessions caps sessions.
	Max      runner.Maxima
	Sessions runner.SessionMaxima
	// Tokens, if set, are accepted like Token, each a caller of its own:
	// sessions belong to the token that made them.
	Tokens []string
	// SessionSweep is how often idle and expired sessions are ended
	// (default 5s).
	SessionSweep time.Duration
	// Runtime is the runtime of requests that name none ("" is runc).
	Runtime string
	// PublicHealth leaves GET /healthz and GET /metrics open without the
	// token (for probes and scrapers that cannot send one).
	PublicHealth bool
	// Fleet, if set, makes this server a member of a fleet: sessions get
	// IDs naming this node, and requests for another member's sessions
	// are forwarded to it (see docs/fleet.md).
	Fleet *fleet.Fleet
}

// Server serves runner.Run over HTTP.
type Server struct {
	runner  *runner.Runner
	cfg     Config
	slots   chan struct{}
	waiting atomic.Int64
	metrics *metrics
	audit   *audit.Log
	// runs tracks requests in progress, so Shutdown can wait for them.
	runs sync.WaitGroup
	// stop ends runs still going when the shutdown grace period is over.
	stopCtx context.Context
	stop    context.CancelFunc
	// done ends the session sweep.
	done chan struct{}
}

// New returns a server running sandboxes on r.
func New(r *runner.Runner, cfg Config) *Server {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 1 << 20
	}
	s := &Server{
		runner: r,
		cfg:    cfg,
		slots:  make(chan struct{}, cfg.Concurrency),
		metrics: newMetrics(func() float64 {
			if r == nil {
				return 0
			}
			return float64(r.WarmRuns())
		}, func() float64 {
			if r == nil {
				return 0
			}
			return float64(r.SharedShimRuns())
		}),
		audit: cfg.Audit,
	}
	s.metrics.addReadyMetrics(r)
	s.stopCtx, s.stop = context.WithCancel(context.Background())
	s.done = make(chan struct{})
	if r != nil {
		go s.expireSessions(cmp.Or(cfg.SessionSweep, 5*time.Second))
	}
	return s
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	routes := []struct {
		method, path string
		h            http.Handler
	}{
		{"POST", "/v1/runs", http.HandlerFunc(s.handleRun)},
		{"POST", "/v1/sessions", http.HandlerFunc(s.handleSessionCreate)},
		{"GET", "/v1/sessions", http.HandlerFunc(s.handleSessionList)},
		{"DELETE", "/v1/sessions/{id}", http.HandlerFunc(s.handleSessionDelete)},
		{"POST", "/v1/sessions/{id}/runs", http.HandlerFunc(s.handleSessionRun)},
		{"GET", "/v1/sessions/{id}/files/{path...}", http.HandlerFunc(s.handleSessionFileGet)},
		{"PUT", "/v1/sessions/{id}/files/{path...}", http.HandlerFunc(s.handleSessionFilePut)},
		{"POST", "/v1/sessions/{id}/pause", http.HandlerFunc(s.handleSessionPause)},
		{"POST", "/v1/sessions/{id}/resume", http.HandlerFunc(s.handleSessionResume)},
		{"POST", "/v1/sessions/{id}/checkpoint", http.HandlerFunc(s.handleSessionCheckpoint)},
		{"POST", "/v1/sessions/{id}/fork", http.HandlerFunc(s.handleSessionFork)},
		{"POST", "/v1/sessions/{id}/timeout", http.HandlerFunc(s.handleSessionTimeout)},
		{"GET", "/v1/sessions/{id}/stats", http.HandlerFunc(s.handleSessionStats)},
		{"GET", "/v1/sessions/{id}/network", http.HandlerFunc(s.handleSessionNetwork)},
		{"PUT", "/v1/sessions/{id}/network/allow", http.HandlerFunc(s.handleSessionAllow)},
		{"GET", "/v1/sessions/{id}/fs/stat", http.HandlerFunc(s.handleFSStat)},
		{"GET", "/v1/sessions/{id}/fs/list", http.HandlerFunc(s.handleFSList)},
		{"GET", "/v1/sessions/{id}/fs/file", http.HandlerFunc(s.handleFSRead)},
		{"PUT", "/v1/sessions/{id}/fs/file", http.HandlerFunc(s.handleFSWrite)},
		{"POST", "/v1/sessions/{id}/fs/mkdir", http.HandlerFunc(s.handleFSMkdir)},
		{"POST", "/v1/sessions/{id}/fs/move", http.HandlerFunc(s.handleFSMove)},
		{"POST", "/v1/sessions/{id}/fs/remove", http.HandlerFunc(s.handleFSRemove)},
		{"GET", "/v1/sessions/{id}/fs/watch", http.HandlerFunc(s.handleFSWatch)},
		{"POST", "/v1/sessions/{id}/processes", http.HandlerFunc(s.handleProcessStart)},
		{"GET", "/v1/sessions/{id}/processes", http.HandlerFunc(s.handleProcessList)},
		{"GET", "/v1/sessions/{id}/processes/{ref}/output", http.HandlerFunc(s.handleProcessOutput)},
		{"POST", "/v1/sessions/{id}/processes/{ref}/signal", http.HandlerFunc(s.handleProcessSignal)},
		{"POST", "/v1/sessions/{id}/processes/{ref}/stdin", http.HandlerFunc(s.handleProcessStdin)},
		{"POST", "/v1/sessions/{id}/processes/{ref}/resize", http.HandlerFunc(s.handleProcessResize)},
		{"GET", "/healthz", http.HandlerFunc(s.handleHealth)},
		{"GET", "/metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{})},
		{"GET", "/v1/openapi.json", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(OpenAPI)
		})},
	}
	// Every 4xx has the one error shape, the mux's own 404 and 405 too.
	allow := map[string][]string{}
	var paths []string
	for _, rt := range routes {
		mux.Handle(rt.method+" "+rt.path, rt.h)
		if allow[rt.path] == nil {
			paths = append(paths, rt.path)
		}
		allow[rt.path] = append(allow[rt.path], rt.method)
	}
	for _, p := range paths {
		methods := strings.Join(allow[p], ", ")
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", methods)
			s.reject(w, r, http.StatusMethodNotAllowed, &APIError{Field: "method", Message: "must be " + strings.ReplaceAll(methods, ", ", " or ") + " for " + p}, nil)
		})
	}
	for _, p := range portPaths {
		mux.HandleFunc(p, s.handleSessionPort)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.reject(w, r, http.StatusNotFound, &APIError{Field: "path", Message: "names nothing: see GET /v1/openapi.json"}, nil)
	})
	return s.authenticate(s.fleetRoute(mux))
}

// authenticate requires the bearer token on every request when one is set.
func (s *Server) authenticate(next http.Handler) http.Handler {
	if s.cfg.Token == "" && len(s.cfg.Tokens) == 0 {
		return next
	}
	var wants [][]byte
	for _, t := range append([]string{s.cfg.Token}, s.cfg.Tokens...) {
		if t != "" {
			wants = append(wants, []byte("Bearer "+t))
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.PublicHealth && r.Method == http.MethodGet && (r.URL.Path == "/healthz" || r.URL.Path == "/metrics") {
			next.ServeHTTP(w, r)
			return
		}
		got := []byte(r.Header.Get("Authorization"))
		ok := 0
		for _, want := range wants {
			ok |= subtle.ConstantTimeCompare(got, want)
		}
		if ok != 1 {
			s.reject(w, r, http.StatusUnauthorized, &APIError{Field: "authorization", Message: "a valid 'Authorization: Bearer <token>' header is required"}, nil)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) handleRun(w http.ResponseWriter, r *http.Request) {
	s.runs.Add(1)
	defer s.runs.Done()
	var rr RunRequest
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rr); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.reject(w, r, http.StatusRequestEntityTooLarge, &APIError{Field: "body", Message: fmt.Sprintf("larger than %d bytes", s.cfg.MaxBody)}, nil)
			return
		}
		s.reject(w, r, http.StatusBadRequest, decodeError(err), nil)
		return
	}
	if dec.More() {
		s.reject(w, r, http.StatusBadRequest, &APIError{Field: "body", Message: "one JSON object expected"}, &rr)
		return
	}
	rr.Runtime = cmp.Or(rr.Runtime, s.cfg.Runtime)
	req, err := rr.Request(s.cfg.Max)
	if err != nil {
		s.reject(w, r, requestStatus(err), err, &rr)
		return
	}
	var stream *ndjsonStream
	if wantsStream(r) {
		stream = newNDJSONStream(w)
		req.Stdout, req.Stderr = stream.writer(stdout), stream.writer(stderr)
	}

	release, queued, ok := s.admit(w, r, &rr)
	if !ok {
		return
	}
	defer release()
	if stream != nil {
		// A stream of the caller's while it runs: past its ceiling, 429.
		done, err := s.runner.HoldStream(owner(r))
		if err != nil {
			w.Header().Set("Retry-After", "10")
			s.reject(w, r, http.StatusTooManyRequests, err, &rr)
			return
		}
		defer done()
	}

	ctx, done := s.runContext(r)
	defer done()

	s.metrics.inFlight.Inc()
	start := time.Now()
	res, err := s.runner.Run(ctx, req)
	s.metrics.inFlight.Dec()
	elapsed := time.Since(start)
	s.metrics.duration.Observe(elapsed.Seconds())

	code := http.StatusOK
	switch {
	case err == nil:
	case errors.Is(err, runner.ErrInterrupted):
		code = 499 // the client is gone or the server is stopping
	case errors.Is(err, runner.ErrInvalid), errors.Is(err, runner.ErrImageNotFound):
		// What the request asked cannot be run (a copy-in tree, an image
		// that is not there): a 4xx, in the one error shape. Streamed
		// too, as nothing ran; should output have gone out, the result
		// line says it instead.
		if stream == nil || !stream.started() {
			s.metrics.runs.WithLabelValues(res.Status, langLabel(rr.Lang)).Inc()
			s.reject(w, r, http.StatusBadRequest, err, &rr)
			return
		}
		code = http.StatusBadRequest
	case fault.Is(err):
		// The host failed (containerd gone, a full disk): the request
		// may well succeed once it is fixed.
		code = http.StatusServiceUnavailable
	default:
		code = http.StatusInternalServerError
	}
	s.metrics.runs.WithLabelValues(res.Status, langLabel(rr.Lang)).Inc()
	if res.StdoutTruncated {
		s.metrics.truncations.WithLabelValues("stdout").Inc()
	}
	if res.StderrTruncated {
		s.metrics.truncations.WithLabelValues("stderr").Inc()
	}
	e := s.entry(r, &rr, code, res.Error)
	e.ID, e.Status, e.Image = res.ID, res.Status, res.Image
	e.ExitCode = &res.ExitCode
	e.QueueMs, e.RunMs = ms(queued), ms(elapsed)
	e.StdoutTruncated, e.StderrTruncated = res.StdoutTruncated, res.StderrTruncated
	e.Network, e.Injected = res.Network, injected(res.Injected)
	s.audit.Write(e)
	if code == 499 {
		if s.stopCtx.Err() == nil || r.Context().Err() != nil {
			return // the client is gone: nobody to answer
		}
		// The server's grace period ended: the caller learns that its run
		// was killed, and why.
		code, res.Error = http.StatusServiceUnavailable, "the server is shutting down: the run was killed"
	}
	if stream != nil {
		// The status line may be out already: how the run ended, a
		// failure or the shutdown included, is in the last line alone.
		stream.finish(res)
		return
	}
	writeJSON(w, code, res)
}

// runContext is a run's context: it ends when the client goes away or
// the server's shutdown grace is over.
func (s *Server) runContext(r *http.Request) (context.Context, func()) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.stopCtx, cancel)
	return ctx, func() { stop(); cancel() }
}

// admit waits for a free slot (or, the queue full, answers 429) and
// returns its release and the time spent waiting; ok is false when the
// request was answered or its client went away.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, rr *RunRequest) (func(), time.Duration, bool) {
	arrived := time.Now()
	select {
	case s.slots <- struct{}{}:
	default:
		if s.waiting.Add(1) > int64(s.cfg.Queue) {
			s.waiting.Add(-1)
			w.Header().Set("Retry-After", "1")
			s.reject(w, r, http.StatusTooManyRequests, &APIError{Message: "the server is at its concurrency limit and its queue is full: retry later"}, rr)
			return nil, 0, false
		}
		s.metrics.queueDepth.Inc()
		select {
		case s.slots <- struct{}{}:
			s.waiting.Add(-1)
			s.metrics.queueDepth.Dec()
		case <-r.Context().Done():
			s.waiting.Add(-1)
			s.metrics.queueDepth.Dec()
			s.audit.Write(s.entry(r, rr, 499, "client went away while queued"))
			return nil, 0, false
		}
	}
	queued := time.Since(arrived)
	s.metrics.queueWait.Observe(queued.Seconds())
	return func() { <-s.slots }, queued, true
}

// healthAnswer is GET /healthz's body.
type healthAnswer struct {
	runner.Health
	// Draining: in a fleet, this server is shutting down.
	Draining bool `json:"draining,omitempty"`
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	h := s.runner.Health(ctx)
	code := http.StatusOK
	if !h.OK {
		code = http.StatusServiceUnavailable
	}
	a := healthAnswer{Health: h}
	if s.cfg.Fleet != nil && s.cfg.Fleet.Draining() {
		// Out of the Service's endpoints: the readiness probe fails,
		// while the sessions held here are still answered. The
		// liveness probe (?live=1) does not fail for it: a draining
		// server is alive, and restarting it would end its sessions.
		a.Draining = true
		if r.URL.Query().Get("live") == "" {
			code = http.StatusServiceUnavailable
		}
	}
	writeJSON(w, code, a)
}

// Shutdown waits for requests in progress until ctx ends, then stops the
// runs still going (their sandboxes are removed) and waits for them; then
// it ends the sessions it holds.
func (s *Server) Shutdown(ctx context.Context) {
	s.shutdown(ctx, false)
}

// HandOver is Shutdown for a server another will follow (an upgrade, a
// restart): the sessions that have an heir are left running for it
// (runner's HandOverSessions), and their IDs returned.
func (s *Server) HandOver(ctx context.Context) []string {
	return s.shutdown(ctx, true)
}

func (s *Server) shutdown(ctx context.Context, handOver bool) (left []string) {
	defer func() { left = s.closeSessions(handOver) }()
	close(s.done)
	done := make(chan struct{})
	go func() {
		s.runs.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.stop()
		<-done
	}
	return nil
}

// langLabel is a run's language as the metrics name it.
func langLabel(lang string) string {
	if lang == "" {
		return "command"
	}
	return lang
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
