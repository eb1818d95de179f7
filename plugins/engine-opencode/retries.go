package opencode

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/sdk/engine"
)

// OpenCode retries a failing model request forever, with a doubling
// back-off (2, 4, 8, ... s). The engine bounds that: retry_max retries in
// a run, or retry_deadline_s into a streak of them, then the run fails
// MODEL_PROVIDER_ERROR naming the model and where it was sent, as the
// native engine's spent retry budget does.

// retriesSpent ends a run whose model kept failing: the session is
// aborted (OpenCode would go on retrying), and the run fails with
// MODEL_PROVIDER_ERROR naming the model, where it was sent, and the last
// error. A server that does not confirm the abort is stopped, so no
// retry outlives the run.
func (r *run) retriesSpent(why string) engine.Result {
	unconfirmed := r.abort()
	if unconfirmed != "" {
		r.e.forget(r.srv)
		_ = r.svc.StopService(context.Background(), serviceName, r.cfg.stopGrace())
	}
	m := r.req.Model
	where := m.BaseURL
	if where == "" {
		where = "the default endpoint of OpenCode's " + r.providerID + " provider"
	}
	res := engine.Failed(CodeModelProviderError, fmt.Sprintf("the model provider kept failing for model %s (%s/%s) at %s: %s; last error: %s",
		m.ID, r.providerID, r.modelID, where, why, capText(r.m.lastRetry, 500)))
	res.Diagnostics, _ = json.Marshal(map[string]any{
		"model_id": m.ID, "opencode_model": r.providerID + "/" + r.modelID, "base_url": m.BaseURL,
		"retries": r.m.retries, "retry_max": r.cfg.RetryMax, "retry_deadline_s": r.cfg.RetryDeadlineS,
		"last_error": r.m.lastRetry, "abort_unconfirmed": unconfirmed,
	})
	res.OutputText = r.m.output()
	return res
}

// plural is n and the noun for it.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// retryStreak times a run of consecutive model retries against the
// deadline: started by the first retry, dropped when the model answers.
type retryStreak struct {
	timer *time.Timer
}

// track starts the timer when a streak starts and stops it when it ends.
func (s *retryStreak) track(retrying bool, deadline time.Duration) {
	switch {
	case retrying && s.timer == nil:
		s.timer = time.NewTimer(deadline)
	case !retrying && s.timer != nil:
		s.stop()
	}
}

// expired fires when the streak has lasted the deadline; nil (never)
// outside a streak.
func (s *retryStreak) expired() <-chan time.Time {
	if s.timer == nil {
		return nil
	}
	return s.timer.C
}

func (s *retryStreak) stop() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}
