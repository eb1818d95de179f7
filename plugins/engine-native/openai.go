package native

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"

	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// openAIProvider speaks OpenAI chat completions: OpenAI itself and the
// servers that copy its API (Ollama, vLLM, llama.cpp, OpenRouter).
type openAIProvider struct {
	client openai.Client
	model  string
}

func newOpenAI(m engine.Model, key string, hc *http.Client) *openAIProvider {
	if key == "" {
		// Local servers (Ollama, llama.cpp) take no key; the SDK still
		// wants one to put in the header.
		key = "none"
	}
	// Retries are the engine's (a budget across the run, counted in its
	// events); the SDK's own would hide them.
	opts := []option.RequestOption{option.WithAPIKey(key), option.WithMaxRetries(0), option.WithHTTPClient(hc)}
	if m.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(m.BaseURL))
	}
	return &openAIProvider{client: openai.NewClient(opts...), model: m.ProviderModel}
}

func (p *openAIProvider) stream(ctx context.Context, in turnInput, sink turnSink) (turnOutput, error) {
	params := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(p.model),
		Messages:      openAIMessages(in),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	for _, t := range in.Tools {
		var schema map[string]any
		if err := json.Unmarshal(t.InputSchema, &schema); err != nil || schema == nil {
			schema = map[string]any{"type": "object"}
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: t.Name, Description: openai.String(t.Description), Parameters: shared.FunctionParameters(schema),
		}))
	}
	s := p.client.Chat.Completions.NewStreaming(ctx, params)
	defer s.Close()

	var out turnOutput
	calls := map[int64]*toolCall{}
	started, finished := false, false
	for s.Next() {
		started = true
		chunk := s.Current()
		if chunk.JSON.Usage.Valid() {
			out.InputTokens, out.OutputTokens = chunk.Usage.PromptTokens, chunk.Usage.CompletionTokens
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			d := ch.Delta
			if r := reasoningOf(d); r != "" && sink.reasoning != nil {
				sink.reasoning(r)
			}
			if d.Content != "" {
				out.Text += d.Content
				if err := sink.text(d.Content); err != nil {
					return out, err
				}
			}
			for _, tc := range d.ToolCalls {
				c := calls[tc.Index]
				if c == nil {
					c = &toolCall{}
					calls[tc.Index] = c
				}
				if tc.ID != "" {
					c.ID = tc.ID
				}
				if tc.Function.Name != "" {
					c.Name = tc.Function.Name
				}
				c.Args += tc.Function.Arguments
			}
			if ch.FinishReason != "" {
				finished = true
			}
		}
	}
	if err := s.Err(); err != nil {
		return out, classifyOpenAI(err, started)
	}
	if !finished {
		// The connection ended cleanly but the model never said it was
		// done: a proxy cut it, or the server died mid-answer.
		return out, &providerError{MidStream: started, Message: "the stream ended before the model finished its turn"}
	}
	idx := make([]int64, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	for _, i := range idx {
		out.Calls = append(out.Calls, *calls[i])
	}
	return out, nil
}

// reasoningOf reads the reasoning text OpenAI-compatible servers stream
// beside the content (vLLM and DeepSeek: reasoning_content; Ollama and
// OpenRouter: reasoning).
func reasoningOf(d openai.ChatCompletionChunkChoiceDelta) string {
	for _, k := range []string{"reasoning_content", "reasoning"} {
		if f, ok := d.JSON.ExtraFields[k]; ok && f.Valid() {
			var s string
			if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
				return s
			}
		}
	}
	return ""
}

func openAIMessages(in turnInput) []openai.ChatCompletionMessageParamUnion {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(in.Messages)+1)
	if in.System != "" {
		out = append(out, openai.SystemMessage(in.System))
	}
	for _, m := range in.Messages {
		switch m.Role {
		case roleUser:
			out = append(out, openai.UserMessage(m.Text))
		case roleTool:
			out = append(out, openai.ToolMessage(m.Text, m.ToolCallID))
		case roleAssistant:
			a := &openai.ChatCompletionAssistantMessageParam{}
			if m.Text != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Text)
			}
			for _, c := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID: c.ID, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.Args},
					},
				})
			}
			out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: a})
		}
	}
	return out
}

// classifyOpenAI turns the SDK's error into a providerError.
func classifyOpenAI(err error, started bool) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		pe := &providerError{Status: apiErr.StatusCode, Message: apiErr.Message, err: err}
		if pe.Message == "" {
			pe.Message = apiErr.RawJSON()
		}
		if apiErr.Response != nil {
			pe.RetryAfter = retryAfter(apiErr.Response.Header)
		}
		if pe.Status == 0 {
			// An error event inside the stream (no HTTP status of its own).
			pe.MidStream = started
		}
		return pe
	}
	return &providerError{MidStream: started, Message: err.Error(), err: err}
}
