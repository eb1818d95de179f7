package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/host/api"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/store"
)

// forwardWait bounds how long a command waits for the run's owner to
// answer; an owner that dies meanwhile has its runs taken over within a
// lease, so a retry then lands on the new owner.
const forwardWait = 15 * time.Second

// commandPoll is how often both sides look at the command table even
// without a notification (one may be missed while a listener reconnects).
const commandPoll = 500 * time.Millisecond

// ErrNotTakenUp is returned by Forward when the owner did not take the
// command up within a lease (it seems gone, its lease not yet lapsed): the
// command was withdrawn, and will not be carried out.
var ErrNotTakenUp = fmt.Errorf("%w (withdrawn)", api.ErrOwnerGone)

// Forward passes a command about a run to its owner and waits for the
// answer: the HTTP status and body the owner's API gave. An owner that does
// not take the command up within a lease gets it withdrawn
// (ErrNotTakenUp); one that took it up and does not answer within
// forwardWait gets CodeOwnerUnreachable.
func (m *Member) Forward(ctx context.Context, runID, owner, kind string, body []byte) (int, []byte, error) {
	ch := make(chan struct{}, 1)
	id, err := m.st.SendCommand(ctx, runID, owner, kind, body)
	if err != nil {
		return 0, nil, err
	}
	m.mu.Lock()
	m.answers[id] = ch
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.answers, id)
		m.mu.Unlock()
	}()
	deadline := time.NewTimer(forwardWait)
	defer deadline.Stop()
	takeUp := time.Now().Add(m.opts.LeaseTTL)
	poll := time.NewTicker(commandPoll)
	defer poll.Stop()
	for {
		cmd, err := m.st.Command(ctx, id)
		if err != nil {
			return 0, nil, err
		}
		if cmd.Answered {
			return cmd.Status, cmd.Answer, nil
		}
		if !cmd.Claimed && time.Now().After(takeUp) {
			withdrawn, err := m.st.AbandonCommand(ctx, id)
			if err != nil {
				return 0, nil, err
			}
			if withdrawn {
				return 0, nil, ErrNotTakenUp
			}
			continue // claimed in the meantime: its answer comes
		}
		select {
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		case <-deadline.C:
			return 0, nil, core.Errf(core.CodeOwnerUnreachable, "", "the host that owns run %s (%s) did not answer within %s; retry shortly (a lost host's runs are taken over within seconds)", runID, owner, forwardWait)
		case <-ch:
		case <-poll.C:
		}
	}
}

func (m *Member) answerNotice(id int64) {
	m.mu.Lock()
	ch := m.answers[id]
	m.mu.Unlock()
	if ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (m *Member) commandNotice(owner string) {
	if owner == m.key {
		m.wakeUpCommands()
	}
}

func (m *Member) wakeUpCommands() {
	select {
	case m.wakeCommands <- struct{}{}:
	default:
	}
}

// resync wakes everything that waits on a notification: hints may have
// been missed.
func (m *Member) resync() {
	m.wakeUpCommands()
	m.mu.Lock()
	for _, ch := range m.answers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	m.mu.Unlock()
	if m.opts.Resync != nil {
		m.opts.Resync()
	}
}

// serveCommands carries out the commands other hosts pass to this one,
// each in its own goroutine (a cancel waiting on its engine must not hold
// up a permission answer); the orchestrator settles races between them
// as it does for direct requests (the first decision wins).
func (m *Member) serveCommands(ctx context.Context) {
	defer m.wg.Done()
	poll := time.NewTicker(commandPoll)
	defer poll.Stop()
	lastCleanup := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.wakeCommands:
		case <-poll.C:
		}
		cmds, err := m.st.OpenCommands(ctx, m.key)
		if err != nil {
			if ctx.Err() == nil {
				m.log.Warn("read commands", "error", err)
			}
			continue
		}
		for _, cmd := range cmds {
			m.mu.Lock()
			busy := m.executing[cmd.ID]
			m.executing[cmd.ID] = true
			m.mu.Unlock()
			if busy {
				continue
			}
			m.wg.Add(1)
			go m.execute(ctx, cmd)
		}
		if time.Since(lastCleanup) > time.Minute {
			lastCleanup = time.Now()
			if err := m.st.DeleteAnsweredCommands(ctx, time.Now().Add(-time.Minute)); err != nil && ctx.Err() == nil {
				m.log.Warn("delete old commands", "error", err)
			}
		}
	}
}

func (m *Member) execute(ctx context.Context, cmd store.RunCommand) {
	defer m.wg.Done()
	defer func() {
		m.mu.Lock()
		delete(m.executing, cmd.ID)
		m.mu.Unlock()
	}()
	claimed, err := m.st.ClaimCommand(ctx, cmd.ID)
	if err != nil || !claimed {
		return // withdrawn by its sender, or taken up already
	}
	status, body := 500, []byte(`{"detail":{"code":"INTERNAL_ERROR","message":"this host cannot carry out commands"}}`)
	if m.opts.Execute != nil {
		status, body = m.opts.Execute(ctx, cmd)
	}
	if err := m.st.AnswerCommand(context.WithoutCancel(ctx), cmd.ID, status, body); err != nil {
		m.log.Warn("answer command", "command", cmd.ID, "run", cmd.RunID, "error", err)
	}
}
