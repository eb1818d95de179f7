// Package native is agenthost's own agent loop: it streams a model's answer
// over OpenAI-compatible chat completions or Anthropic Messages, runs the
// tools the model calls through the host, and feeds the results back until
// the model answers in plain text. See README.md.
package native

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/plugin"
)

// Error codes of native runs.
const (
	// CodeProviderError: the model provider refused or kept failing.
	CodeProviderError = "MODEL_PROVIDER_ERROR"
	// CodeModelConfig: the run's model binding cannot be used (no key, an
	// unknown provider).
	CodeModelConfig = "MODEL_CONFIG_INVALID"
	// CodeStateInvalid: the saved state of a resumed run cannot be read.
	CodeStateInvalid = "ENGINE_STATE_INVALID"
)

// PauseTokenBudget is the pause reason when the run's token budget is spent.
const PauseTokenBudget = "token_budget"

// Config is the plugin's `config { … }` block. Zero values take defaults.
type Config struct {
	// MaxToolIterations caps tool rounds per run when the host sets none.
	MaxToolIterations int `json:"max_tool_iterations"`
	// MaxOutputTokens bounds each model turn (Anthropic requires a bound).
	MaxOutputTokens int64 `json:"max_output_tokens"`
	// RetryMax is the run's budget of retried provider requests.
	RetryMax int `json:"retry_max"`
	// RetryBaseMS and RetryCapMS shape the exponential backoff.
	RetryBaseMS int `json:"retry_base_ms"`
	RetryCapMS  int `json:"retry_cap_ms"`
	// RequestTimeoutS bounds one model turn, headers to last chunk.
	RequestTimeoutS int `json:"request_timeout_s"`
	// ContextTokens is the models' context window: each request is kept
	// within it, less max_output_tokens, by compacting the conversation
	// (compact.go). Default DefaultContextTokens.
	ContextTokens int `json:"context_tokens"`
}

// Defaults of Config.
const (
	DefaultMaxToolIterations = 8
	DefaultRetryMax          = 6
	DefaultRetryBase         = 500 * time.Millisecond
	DefaultRetryCap          = 20 * time.Second
	DefaultRequestTimeout    = 10 * time.Minute
)

// Engine is the native engine. One process serves many runs at once.
type Engine struct {
	mu   sync.RWMutex
	cfg  Config
	http *http.Client
}

// New makes the engine with default config.
func New() *Engine {
	// One transport for every run: connections to a provider are reused
	// across turns and runs.
	return &Engine{http: &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 32, IdleConnTimeout: 90 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
	}}}
}

// Info identifies the plugin.
func (e *Engine) Info() plugin.Info {
	return plugin.Info{Name: "native", Kind: plugin.KindEngine, Version: "0.1.0", APIVersion: plugin.APIVersion,
		Description:  "agenthost's own tool-calling loop over OpenAI-compatible and Anthropic APIs",
		Capabilities: map[string]string{plugin.CapabilityNeedsModel: "true"}}
}

// Configure reads the plugin's config block; unknown keys are refused.
func (e *Engine) Configure(_ context.Context, raw json.RawMessage) error {
	var c Config
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return plugin.Errorf(plugin.CodeInvalidArgument, "config", "native engine config: %v", err)
		}
	}
	for field, v := range map[string]int64{
		"max_tool_iterations": int64(c.MaxToolIterations), "max_output_tokens": c.MaxOutputTokens, "retry_max": int64(c.RetryMax),
		"retry_base_ms": int64(c.RetryBaseMS), "retry_cap_ms": int64(c.RetryCapMS), "request_timeout_s": int64(c.RequestTimeoutS),
		"context_tokens": int64(c.ContextTokens),
	} {
		if v < 0 {
			return plugin.Errorf(plugin.CodeInvalidArgument, field, "%s must not be negative", field)
		}
	}
	e.mu.Lock()
	e.cfg = c
	e.mu.Unlock()
	return nil
}

// settings are a run's effective limits.
type settings struct {
	maxIterations       int
	maxTokens           int64
	retryMax            int
	retryBase, retryCap time.Duration
	requestTimeout      time.Duration
	budget              int64
	// contextLimit is what a request may be estimated at: the context
	// window less the answer's reserve.
	contextLimit int
}

func (e *Engine) settings(l engine.Limits) settings {
	e.mu.RLock()
	c := e.cfg
	e.mu.RUnlock()
	s := settings{
		maxIterations: firstPositive(l.MaxToolIterations, c.MaxToolIterations, DefaultMaxToolIterations),
		maxTokens:     c.MaxOutputTokens,
		retryMax:      firstPositive(c.RetryMax, DefaultRetryMax),
		retryBase:     msOr(c.RetryBaseMS, DefaultRetryBase),
		retryCap:      msOr(c.RetryCapMS, DefaultRetryCap),
		requestTimeout: func() time.Duration {
			if c.RequestTimeoutS > 0 {
				return time.Duration(c.RequestTimeoutS) * time.Second
			}
			return DefaultRequestTimeout
		}(),
		budget:       l.TokenBudget,
		contextLimit: contextLimit(c),
	}
	if s.retryCap < s.retryBase {
		s.retryCap = s.retryBase
	}
	return s
}

func firstPositive(vs ...int) int {
	for _, v := range vs {
		if v > 0 {
			return v
		}
	}
	return 0
}

// contextLimit is the request size the config allows: the context window
// less the answer's reserve, and never under a quarter of the window.
func contextLimit(c Config) int {
	window := firstPositive(c.ContextTokens, DefaultContextTokens)
	reserve := int(c.MaxOutputTokens)
	if reserve <= 0 {
		reserve = defaultOutputReserve
	}
	return max(window-reserve, window/4)
}

func msOr(ms int, d time.Duration) time.Duration {
	if ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return d
}

// Run drives one run: model turn, tool round, repeat.
func (e *Engine) Run(ctx context.Context, req engine.RunRequest, host engine.Host) (engine.Result, error) {
	set := e.settings(req.Limits)
	prov, err := newProvider(req.Model, e.http)
	if err != nil {
		return engine.Failed(CodeModelConfig, err.Error()), nil
	}
	conv := newConversation(req)
	if len(req.State) > 0 {
		if conv, err = restoreConversation(req.State); err != nil {
			return engine.Failed(CodeStateInvalid, err.Error()), nil
		}
		conv.answerDanglingCalls()
		if conv.BudgetPaused {
			// Resuming a budget pause grants the run one more budget.
			conv.BudgetPaused, conv.BudgetFloor = false, conv.used()
		}
		_ = host.Emit(engine.Status("engine_resumed", fmt.Sprintf("continuing after %d tool rounds", conv.Iterations)))
	}
	l := &loop{e: e, host: host, prov: prov, model: req.Model, conv: conv, set: set, tools: req.Tools, retriesLeft: set.retryMax,
		contextLimit: set.contextLimit}
	return l.run(ctx)
}

// loop is one run's state while it runs.
type loop struct {
	e           *Engine
	host        engine.Host
	prov        provider
	model       engine.Model
	conv        *conversation
	set         settings
	tools       []engine.ToolDescriptor
	retriesLeft int
	// contextLimit is the request size, in estimated tokens, this run
	// keeps to; a provider's refusal as too long lowers it.
	contextLimit int
}

// nudge asks for a plain answer after a turn that said and did nothing.
const nudge = "Reply to me in plain text now: say what you did or answer my message. Do not call tools."

// capNote tells the model its tool rounds are used up.
const capNote = "You have used every tool round this run allows. Do not call tools; reply in plain text with what you did and what is left."

func (l *loop) run(ctx context.Context) (engine.Result, error) {
	c := l.conv
	for {
		if ctx.Err() != nil {
			return engine.Cancelled(), nil
		}
		if l.set.budget > 0 && c.used()-c.BudgetFloor >= l.set.budget {
			c.BudgetPaused = true
			if err := l.save(ctx); err != nil {
				return l.stopped(ctx, err)
			}
			_ = l.host.Emit(engine.Status("token_budget", fmt.Sprintf("used %d tokens of a %d budget; resume to continue", c.used()-c.BudgetFloor, l.set.budget)))
			return engine.Result{Status: engine.StatusPaused, PauseReason: PauseTokenBudget, OutputText: c.Output}, nil
		}
		tools := l.tools
		capped := c.Iterations >= l.set.maxIterations
		if capped {
			// The cap is reached: one last turn, without tools, so the
			// user still gets an answer.
			tools = nil
			if last := c.Messages[len(c.Messages)-1]; last.Role != roleUser || last.Text != capNote {
				c.Messages = append(c.Messages, message{Role: roleUser, Text: capNote})
				_ = l.host.Emit(engine.Status("iteration_limit", fmt.Sprintf("%d tool rounds done; asking for a final answer", c.Iterations)))
			}
		}
		if c.ForcedText && len(c.Messages) > 0 && c.Messages[len(c.Messages)-1].Text == nudge {
			tools = nil
		}
		out, err := l.turn(ctx, tools)
		if err != nil {
			return l.stopped(ctx, err)
		}
		c.InputTokens += out.InputTokens
		c.OutputTokens += out.OutputTokens
		if out.InputTokens != 0 || out.OutputTokens != 0 {
			_ = l.host.Emit(engine.Event{Kind: engine.KindUsage, InputTokens: out.InputTokens, OutputTokens: out.OutputTokens})
		}
		c.Output += out.Text
		if tools == nil {
			out.Calls = nil // a model that calls tools it was not offered is ignored
		}
		c.Messages = append(c.Messages, message{Role: roleAssistant, Text: out.Text, ToolCalls: out.Calls})

		if len(out.Calls) == 0 {
			if strings.TrimSpace(out.Text) == "" && !c.ForcedText && !capped {
				// Neither text nor a tool call: one forced plain-text turn.
				c.ForcedText = true
				c.Messages = append(c.Messages, message{Role: roleUser, Text: nudge})
				if err := l.save(ctx); err != nil {
					return l.stopped(ctx, err)
				}
				continue
			}
			if err := l.save(ctx); err != nil {
				return l.stopped(ctx, err)
			}
			return engine.Completed(c.Output), nil
		}
		for _, call := range out.Calls {
			if err := l.callTool(ctx, call); err != nil {
				return l.stopped(ctx, err)
			}
		}
		c.Iterations++
		if err := l.save(ctx); err != nil {
			return l.stopped(ctx, err)
		}
	}
}

// turn runs one model turn with the retry policy: 429, 5xx and unanswered
// connections are retried with capped exponential backoff while the run's
// retry budget lasts; a stream that breaks off midway is retried once.
func (l *loop) turn(ctx context.Context, tools []engine.ToolDescriptor) (turnOutput, error) {
	var shown strings.Builder // text of this turn already streamed to the user
	midStreamRetried := false
	overflows := 0
	for attempt := 1; ; attempt++ {
		l.fitContext(tools)
		in := turnInput{System: l.conv.system(), Messages: l.conv.Messages, Tools: tools, MaxTokens: l.set.maxTokens}
		// A retried turn streams again from its start: what the user has
		// already seen is not repeated, as long as the new answer begins
		// the same way.
		skip := shown.String()
		sink := turnSink{
			text: func(t string) error {
				if skip != "" {
					switch {
					case strings.HasPrefix(skip, t):
						skip = skip[len(t):]
						return nil
					case strings.HasPrefix(t, skip):
						t, skip = t[len(skip):], ""
					default:
						skip = ""
						_ = l.host.Emit(engine.Status("model_retry", "the model's answer restarted differently; the text below replaces the text above"))
						shown.Reset()
					}
				}
				shown.WriteString(t)
				return l.host.Emit(engine.Delta(t))
			},
			reasoning: func(t string) { _ = l.host.Emit(engine.Event{Kind: engine.KindReasoning, Text: t}) },
		}
		tctx, cancel := context.WithTimeout(ctx, l.set.requestTimeout)
		out, err := l.prov.stream(tctx, in, sink)
		timedOut := tctx.Err() == context.DeadlineExceeded && ctx.Err() == nil
		cancel()
		if err == nil {
			return out, nil
		}
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		var pe *providerError
		if timedOut {
			pe = &providerError{MidStream: shown.Len() > 0, Message: fmt.Sprintf("no complete answer within %s", l.set.requestTimeout)}
		} else if !errors.As(err, &pe) {
			return out, err // the host refused an event: the run is over
		}
		if pe.overflow() && overflows < maxOverflowRetries {
			// The model's window is smaller than the limit assumed: aim
			// below what was refused and ask again, once the
			// conversation is smaller (not from the retry budget).
			overflows++
			refused := estimateTokens(in.System, in.Messages, in.Tools)
			l.contextLimit = min(l.contextLimit, int(float64(refused)*overflowShrink))
			if c := l.conv.compact(l.contextLimit, tools); c.changed() {
				_ = l.host.Emit(engine.Status("context_compacted", "the provider refused the request as too long for the model's context; "+c.describe(l.contextLimit)))
				continue
			}
			return out, fmt.Errorf("the conversation cannot be made to fit the model's context (about %d tokens refused): %w", refused, pe)
		}
		switch {
		case pe.MidStream && !midStreamRetried:
			midStreamRetried = true
		case pe.MidStream:
			return out, pe
		case !pe.retryable():
			return out, pe
		}
		if l.retriesLeft <= 0 {
			return out, fmt.Errorf("retry budget of %d spent: %w", l.set.retryMax, pe)
		}
		l.retriesLeft--
		wait := backoff(attempt, l.set.retryBase, l.set.retryCap, pe.RetryAfter)
		_ = l.host.Emit(engine.Status("model_retry", fmt.Sprintf("%v; retrying in %s", pe, wait.Round(time.Millisecond))))
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// fitContext compacts the conversation when the next request would not
// fit the run's context limit, and tells the user.
func (l *loop) fitContext(tools []engine.ToolDescriptor) {
	if c := l.conv.compact(l.contextLimit, tools); c.changed() {
		_ = l.host.Emit(engine.Status("context_compacted", c.describe(l.contextLimit)))
	}
}

// callTool runs one tool call through the host and records its result for
// the model. Arguments that are not JSON are passed on as a string, so the
// host's input guard answers the model with exactly what is wrong.
func (l *loop) callTool(ctx context.Context, call toolCall) error {
	input := json.RawMessage(call.Args)
	if strings.TrimSpace(call.Args) == "" {
		input = json.RawMessage("{}")
	} else if !json.Valid(input) {
		input, _ = json.Marshal(call.Args)
	}
	res, err := l.host.CallTool(ctx, engine.ToolCall{CallID: call.ID, Tool: call.Name, Input: input})
	if err != nil {
		return err
	}
	msg := message{Role: roleTool, ToolCallID: call.ID, ToolName: call.Name}
	if res.OK {
		msg.Text = string(res.Output)
		if msg.Text == "" {
			msg.Text = "{}"
		}
	} else {
		msg.IsError = true
		b, _ := json.Marshal(map[string]any{"error": res.Error})
		msg.Text = string(b)
	}
	l.conv.Messages = append(l.conv.Messages, msg)
	return nil
}

func (l *loop) save(ctx context.Context) error {
	b, err := json.Marshal(l.conv)
	if err != nil {
		return err
	}
	return l.host.SaveState(ctx, b)
}

// stopped turns the error that ended the loop into the run's result.
func (l *loop) stopped(ctx context.Context, err error) (engine.Result, error) {
	if ctx.Err() != nil {
		return engine.Cancelled(), nil
	}
	var pe *providerError
	if errors.As(err, &pe) {
		diag, _ := json.Marshal(map[string]any{"provider_status": pe.Status, "provider_message": pe.Message, "mid_stream": pe.MidStream,
			"model_id": l.model.ID, "base_url": l.model.BaseURL})
		// Name the model and where it was sent: "no response" alone does
		// not tell an operator which binding to fix.
		where := l.model.BaseURL
		if where == "" {
			where = "the " + l.model.Provider + " API"
		}
		r := engine.Failed(CodeProviderError, fmt.Sprintf("%v (model %s at %s)", err, l.model.ID, where))
		r.Diagnostics = diag
		r.OutputText = l.conv.Output
		return r, nil
	}
	return engine.Result{}, err
}
