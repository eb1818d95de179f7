package hostapp

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/api"
	"github.com/agenthost/agenthost/host/metrics"
	"github.com/agenthost/agenthost/host/store"
	"github.com/hashicorp/go-hclog"
)

// PauseHostLost is the pause reason a run taken over from a lost host
// shows between its old owner's last event and its resumption here.
const PauseHostLost = "host_lost"

// settleTakenOver settles runs this host just took over from a lost host
// (it owns them now). A run whose log ends with its terminal event only
// has its row repaired. A run that was executing and whose engine saved
// its state continues here: run.paused (host_lost), then run.resumed, in a
// new sandbox holding the files saved with that state. One with no saved
// state fails closed with HOST_LOST. A run paused for its user (a
// permission question, its token budget) stays paused, now owned here.
func settleTakenOver(ctx context.Context, st *store.Store, srv *api.Server, runs []*core.Run, met *metrics.Metrics, log hclog.Logger) {
	for _, r := range runs {
		outcome, err := settleOne(ctx, st, srv, r, log)
		if err != nil {
			outcome = "error"
			log.Error("settle a run taken over from a lost host", "run", r.ID, "error", err)
		}
		met.ObserveTakeover(outcome)
	}
}

// settleOne settles one run taken over and says what became of it:
// repaired, kept_paused, failed or resumed.
func settleOne(ctx context.Context, st *store.Store, srv *api.Server, r *core.Run, log hclog.Logger) (string, error) {
	last, err := st.LastEvent(ctx, r.ID, r.AppID)
	if err != nil {
		return "", err
	}
	if last != nil && last.Event.Terminal() {
		return "repaired", repairFromTerminal(ctx, st, r, last)
	}
	if r.Status == core.RunPaused && r.PauseReason != PauseHostLost && r.PauseReason != "interrupted" {
		return "kept_paused", nil // it waits for its user, on whichever host they ask
	}
	state, err := st.LoadEngineState(ctx, r.ID)
	if err != nil {
		return "", err
	}
	if len(state) == 0 {
		return "failed", failRun(ctx, st, r, core.CodeHostLost, "the host executing the run was lost and the run had no saved state to continue from")
	}
	if err := pauseFor(ctx, st, r, last, PauseHostLost, "the host executing the run was lost; another host continues it from its last saved step"); err != nil {
		return "", err
	}
	paused, err := st.GetRun(ctx, r.ID)
	if err != nil {
		return "", err
	}
	if err := srv.Reattach(ctx, paused); err != nil {
		log.Warn("a run taken over could not be resumed; it stays paused", "run", r.ID, "error", err)
		return "kept_paused", nil
	}
	log.Warn("resumed a run taken over from a lost host", "run", r.ID)
	return "resumed", nil
}

// repairFromTerminal writes a run's final row from its terminal event (its
// host died between the two writes, or wrote them in one transaction that
// the row read raced).
func repairFromTerminal(ctx context.Context, st *store.Store, r *core.Run, last *core.Envelope) error {
	var p struct {
		Status  core.RunStatus `json:"status"`
		Code    string         `json:"error_code"`
		Message string         `json:"error_message"`
	}
	_ = json.Unmarshal(last.Payload, &p)
	if !p.Status.Terminal() {
		p.Status = core.RunFailed
	}
	now := time.Now().UTC()
	_, err := st.UpdateRun(ctx, r.ID, func(run *core.Run) error {
		run.Status, run.ErrorCode, run.ErrorMessage, run.FinishedAt, run.UpdatedAt = p.Status, p.Code, p.Message, &now, now
		return nil
	})
	return err
}

// failRun ends a run with run.failed and the code.
func failRun(ctx context.Context, st *store.Store, r *core.Run, code, msg string) error {
	payload, _ := json.Marshal(map[string]any{"status": core.RunFailed, "error_code": code, "error_message": msg})
	if _, err := st.Append(ctx, r, core.EventInput{Type: core.EventRunFailed, Payload: payload}); err != nil {
		return err
	}
	now := time.Now().UTC()
	_, err := st.UpdateRun(ctx, r.ID, func(run *core.Run) error {
		run.Status, run.ErrorCode, run.ErrorMessage, run.FinishedAt, run.UpdatedAt = core.RunFailed, code, msg, &now, now
		if run.SandboxID != "" {
			run.SandboxStatus = "stopped"
		}
		return nil
	})
	return err
}
