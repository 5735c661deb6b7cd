package server

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus series, on a registry of its own.
type metrics struct {
	reg         *prometheus.Registry
	runs        *prometheus.CounterVec
	duration    prometheus.Histogram
	queueWait   prometheus.Histogram
	inFlight    prometheus.Gauge
	queueDepth  prometheus.Gauge
	truncations *prometheus.CounterVec
	rejected    *prometheus.CounterVec
}

// newMetrics makes the series; warm and shared read the runner's counts
// of runs that took a pre-created sandbox and that shared a shim.
func newMetrics(warm, shared func() float64) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxer_runs_total", Help: "Finished runs by status and language.",
		}, []string{"status", "lang"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "boxer_run_duration_seconds", Help: "Time from admission to result, per run.",
			Buckets: []float64{0.05, 0.1, 0.2, 0.4, 0.8, 1.5, 3, 6, 15, 30, 60, 300},
		}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "boxer_queue_wait_seconds", Help: "Time a request waited for a run slot.",
			Buckets: []float64{0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}),
		inFlight:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "boxer_runs_in_flight", Help: "Sandboxes running now."}),
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{Name: "boxer_queue_depth", Help: "Requests waiting for a run slot."}),
		truncations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxer_output_truncations_total", Help: "Runs whose output was cut at output_limit, by stream.",
		}, []string{"stream"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxer_requests_rejected_total", Help: "Requests refused before running, by HTTP status.",
		}, []string{"code"}),
	}
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "boxer_warm_runs_total", Help: "Runs that took a sandbox prepared before the request.",
	}, warm))
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "boxer_shared_shim_runs_total", Help: "Sandboxes that shared a containerd shim with others instead of starting their own.",
	}, shared))
	m.reg.MustRegister(m.runs, m.duration, m.queueWait, m.inFlight, m.queueDepth, m.truncations, m.rejected,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}
