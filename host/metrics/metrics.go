// Package metrics exposes the host's Prometheus metrics: how long each phase
// of a run took (the same timing_metrics_ms the run's context records), runs
// by engine and outcome, and tokens used.
package metrics

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/agenthost/agenthost/core"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds the host's collectors on a registry of its own.
type Metrics struct {
	reg    *prometheus.Registry
	phase  *prometheus.HistogramVec
	runs   *prometheus.CounterVec
	tokens *prometheus.CounterVec
	// Several hosts on one database (docs/scale-out.md).
	takeovers *prometheus.CounterVec
	leaseLost prometheus.Counter
	commands  *prometheus.CounterVec
	// warmEvicted counts idle agent servers stopped for the cap.
	warmEvicted prometheus.Counter
	// snapshots counts snapshots of sandboxes' files by kind.
	snapshots *prometheus.CounterVec
}

// New registers the collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		phase: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "agenthost_run_phase_seconds",
			Help: "Duration of run phases (create_run, create_run_api, sandbox_start, engine_start, first_token, apply, total).",
			// 1 ms to ~16 min: API phases are milliseconds, whole runs minutes.
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 20),
		}, []string{"phase", "engine"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agenthost_runs_total",
			Help: "Finished runs by engine and outcome (completed, failed, cancelled).",
		}, []string{"engine", "outcome", "error_code"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agenthost_run_tokens_total",
			Help: "Model tokens used by finished runs, by engine and direction.",
		}, []string{"engine", "direction"}),
		takeovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agenthost_runs_taken_over_total",
			Help: "Runs this host took over from a lost host, by what became of them (resumed, failed, kept_paused, repaired, error).",
		}, []string{"outcome"}),
		leaseLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agenthost_lease_lost_total",
			Help: "Times this host found its lease taken (another host declared it dead) and let its runs go.",
		}),
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agenthost_commands_served_total",
			Help: "Commands other hosts passed to this one for runs it owns, by kind and answer status.",
		}, []string{"kind", "status"}),
		warmEvicted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agenthost_warm_agent_servers_evicted_total",
			Help: "Idle chat sandboxes holding an agent server that were stopped because the host keeps no more warm (AGENTHOST_WARM_SERVERS_MAX, AGENTHOST_WARM_SERVERS_MEMORY_MB).",
		}),
		snapshots: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agenthost_sandbox_snapshots_total",
			Help: "Snapshots of sandboxes' files, by kind: skipped (nothing touched the sandbox since a settled snapshot, the backend was not asked), changes (only what changed was passed), whole.",
		}, []string{"kind"}),
	}
	m.reg.MustRegister(m.phase, m.runs, m.tokens, m.takeovers, m.leaseLost, m.commands, m.warmEvicted, m.snapshots, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObserveTakeover counts a run taken over from a lost host.
func (m *Metrics) ObserveTakeover(outcome string) { m.takeovers.WithLabelValues(outcome).Inc() }

// ObserveLeaseLost counts this host finding its lease taken.
func (m *Metrics) ObserveLeaseLost() { m.leaseLost.Inc() }

// ObserveCommandServed counts a command carried out for another host.
func (m *Metrics) ObserveCommandServed(kind string, status int) {
	m.commands.WithLabelValues(kind, strconv.Itoa(status)).Inc()
}

// ObserveWarmServerEvicted counts an idle agent server stopped for the cap.
func (m *Metrics) ObserveWarmServerEvicted() { m.warmEvicted.Inc() }

// ObserveSnapshot counts a snapshot of a sandbox's files by kind.
func (m *Metrics) ObserveSnapshot(kind string) { m.snapshots.WithLabelValues(kind).Inc() }

// WatchWarmPool shows the kept chat sandboxes and, of the idle ones, those
// holding an agent server and their memory, as gauges read from stats at
// each scrape.
func (m *Metrics) WatchWarmPool(stats func() (kept, idleServers int, serverRSS int64)) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "agenthost_warm_sandboxes",
			Help: "Chat sandboxes this host keeps between runs, idle or in use.",
		}, func() float64 { kept, _, _ := stats(); return float64(kept) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "agenthost_warm_agent_servers",
			Help: "Idle kept chat sandboxes holding an agent server (OpenCode's), at most AGENTHOST_WARM_SERVERS_MAX.",
		}, func() float64 { _, idle, _ := stats(); return float64(idle) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "agenthost_warm_agent_servers_memory_bytes",
			Help: "Resident memory the services of idle kept chat sandboxes hold, as their backend reports it, at most AGENTHOST_WARM_SERVERS_MEMORY_MB.",
		}, func() float64 { _, _, rss := stats(); return float64(rss) }))
}

// ObserveRun records a run that has reached its final state. The run is
// counted last: a scrape that sees it counted also sees its phases and
// tokens.
func (m *Metrics) ObserveRun(run *core.Run) {
	var ctx struct {
		Timings map[string]int64 `json:"timing_metrics_ms"`
	}
	if json.Unmarshal(run.Context, &ctx) == nil {
		for phase, ms := range ctx.Timings {
			m.phase.WithLabelValues(phase, run.Engine).Observe(float64(ms) / 1000)
		}
	}
	m.tokens.WithLabelValues(run.Engine, "input").Add(float64(run.InputTokens))
	m.tokens.WithLabelValues(run.Engine, "output").Add(float64(run.OutputTokens))
	m.runs.WithLabelValues(run.Engine, string(run.Status), run.ErrorCode).Inc()
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
