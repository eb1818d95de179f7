package native

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/sdk/engine"
)

// turnInput is one request to the model.
type turnInput struct {
	System    string
	Messages  []message
	Tools     []engine.ToolDescriptor
	MaxTokens int64
}

// turnSink receives what the model streams. text may fail (the run ended);
// the provider then stops reading.
type turnSink struct {
	text      func(string) error
	reasoning func(string)
}

// turnOutput is one complete model turn.
type turnOutput struct {
	Text         string
	Calls        []toolCall
	InputTokens  int64
	OutputTokens int64
}

// provider streams one model turn over a provider's wire format.
type provider interface {
	stream(ctx context.Context, in turnInput, sink turnSink) (turnOutput, error)
}

// providerError is a failed turn, classified for the retry policy.
type providerError struct {
	// Status is the HTTP status, or 0 when no response came.
	Status  int
	Message string
	// RetryAfter is the provider's hint, when it gave one.
	RetryAfter time.Duration
	// MidStream: the response had started streaming when it broke off.
	MidStream bool
	err       error
}

func (e *providerError) Error() string {
	switch {
	case e.MidStream:
		return "the model's stream broke off: " + e.Message
	case e.Status == 0:
		return "no response from the model provider: " + e.Message
	}
	return fmt.Sprintf("model provider answered %d: %s", e.Status, e.Message)
}

func (e *providerError) Unwrap() error { return e.err }

// retryable reports whether a fresh attempt may succeed: rate limits,
// server errors and connections that never got an answer. Other 4xx mean
// the request itself is wrong; repeating it only wastes the budget.
func (e *providerError) retryable() bool {
	return e.Status == 0 && !e.MidStream || e.Status == http.StatusTooManyRequests || e.Status >= 500
}

// overflowHints are what providers say when a request does not fit the
// model's context: OpenAI's code and message, Anthropic's message, and
// the wordings of OpenAI-compatible servers (vLLM, llama.cpp, Ollama).
var overflowHints = []string{"context_length_exceeded", "maximum context length", "context length", "context window",
	"prompt is too long", "too many tokens", "input is too long", "exceeds the context"}

// overflow reports whether the provider refused the request as too long
// for the model's context: the conversation must shrink, and asking again
// unchanged is futile.
func (e *providerError) overflow() bool {
	switch e.Status {
	case http.StatusRequestEntityTooLarge:
		return true
	case http.StatusBadRequest:
	default:
		return false
	}
	text := strings.ToLower(e.Message)
	if e.err != nil {
		text += " " + strings.ToLower(e.err.Error())
	}
	for _, h := range overflowHints {
		if strings.Contains(text, h) {
			return true
		}
	}
	return false
}

// retryAfter reads a Retry-After header (seconds or an HTTP date).
func retryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t)
	}
	return 0
}

// backoff is the capped exponential delay before retry attempt n (from 1),
// with jitter so that many runs hitting one rate limit do not retry in step.
// A provider's Retry-After wins when it is longer, up to the cap.
func backoff(n int, base, maxDelay, hint time.Duration) time.Duration {
	d := base << min(n-1, 20)
	if d > maxDelay || d <= 0 {
		d = maxDelay
	}
	d = d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
	if hint > d {
		d = min(hint, maxDelay)
	}
	return d
}

// Provider names a model's provider binding may carry.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)

// openAICompatible lists providers that speak OpenAI's chat completions.
var openAICompatible = map[string]bool{
	ProviderOpenAI: true, "openai-compatible": true, "ollama": true, "vllm": true,
	"llama.cpp": true, "llamacpp": true, "openrouter": true, "azure-openai": true,
}

// errConfig marks a model binding the engine cannot use; retrying is futile.
var errConfig = errors.New("model binding unusable")

// newProvider builds the provider for the run's pinned model. The key is read
// from the environment variable the binding names; the plugin's config must
// pass that variable through (env = [...]).
func newProvider(m engine.Model, httpClient *http.Client) (provider, error) {
	if m.ProviderModel == "" {
		return nil, fmt.Errorf("%w: model %q has no provider model name", errConfig, m.ID)
	}
	key := ""
	if m.APIKeyEnv != "" {
		var ok bool
		if key, ok = os.LookupEnv(m.APIKeyEnv); !ok || key == "" {
			return nil, fmt.Errorf("%w: the API key variable %s is not set in the native engine's environment "+
				"(set it for the host and list it in the engine's plugin config env)", errConfig, m.APIKeyEnv)
		}
	}
	switch p := strings.ToLower(m.Provider); {
	case p == ProviderAnthropic:
		return newAnthropic(m, key, httpClient), nil
	case openAICompatible[p]:
		return newOpenAI(m, key, httpClient), nil
	default:
		return nil, fmt.Errorf("%w: provider %q is not supported by the native engine (openai-compatible or anthropic)", errConfig, m.Provider)
	}
}
