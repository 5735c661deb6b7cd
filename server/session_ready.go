package server

// The ready sessions' figures.

import (
	"github.com/boxer-dev/boxer/runner"
	"github.com/prometheus/client_golang/prometheus"
)

// addReadyMetrics registers the ready sessions' series: how many wait,
// how many requests took.
func (m *metrics) addReadyMetrics(r *runner.Runner) {
	if r == nil {
		return
	}
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "boxer_ready_sessions", Help: "Sessions made and preloaded ahead of requests, waiting for one.",
		}, func() float64 { return float64(r.ReadySessions()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "boxer_ready_sessions_claimed_total", Help: "Sessions created by taking a ready session.",
		}, func() float64 { return float64(r.ReadyClaims()) }),
	)
}
