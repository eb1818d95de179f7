package native

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// anthropicProvider speaks Anthropic's Messages API.
type anthropicProvider struct {
	client anthropic.Client
	model  string
}

// defaultAnthropicMaxTokens is sent when the engine's config sets none:
// Anthropic requires max_tokens on every request.
const defaultAnthropicMaxTokens = 8192

func newAnthropic(m engine.Model, key string, hc *http.Client) *anthropicProvider {
	opts := []option.RequestOption{option.WithAPIKey(key), option.WithMaxRetries(0), option.WithHTTPClient(hc)}
	if m.BaseURL != "" {
		// The SDK adds "v1/messages" itself; a base URL written the OpenAI
		// way (ending in /v1) is accepted too.
		base := strings.TrimSuffix(strings.TrimSuffix(m.BaseURL, "/"), "/v1")
		opts = append(opts, option.WithBaseURL(base+"/"))
	}
	return &anthropicProvider{client: anthropic.NewClient(opts...), model: m.ProviderModel}
}

func (p *anthropicProvider) stream(ctx context.Context, in turnInput, sink turnSink) (turnOutput, error) {
	maxTokens := in.MaxTokens
	if maxTokens <= 0 {
		maxTokens = defaultAnthropicMaxTokens
	}
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(p.model),
		MaxTokens: maxTokens,
		Messages:  anthropicMessages(in.Messages),
	}
	if in.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: in.System}}
	}
	for _, t := range in.Tools {
		params.Tools = append(params.Tools, anthropicTool(t))
	}
	s := p.client.Messages.NewStreaming(ctx, params)
	defer s.Close()

	var out turnOutput
	calls := map[int64]*toolCall{}
	started, finished := false, false
	for s.Next() {
		started = true
		ev := s.Current()
		switch ev.Type {
		case "message_start":
			out.InputTokens = ev.Message.Usage.InputTokens
			out.OutputTokens = ev.Message.Usage.OutputTokens
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				calls[ev.Index] = &toolCall{ID: ev.ContentBlock.ID, Name: ev.ContentBlock.Name}
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				out.Text += ev.Delta.Text
				if err := sink.text(ev.Delta.Text); err != nil {
					return out, err
				}
			case "input_json_delta":
				if c := calls[ev.Index]; c != nil {
					c.Args += ev.Delta.PartialJSON
				}
			case "thinking_delta":
				if sink.reasoning != nil {
					sink.reasoning(ev.Delta.Thinking)
				}
			}
		case "message_delta":
			// Counts in message_delta are cumulative for the message.
			if ev.Usage.OutputTokens > 0 {
				out.OutputTokens = ev.Usage.OutputTokens
			}
			if ev.Usage.InputTokens > 0 {
				out.InputTokens = ev.Usage.InputTokens
			}
		case "message_stop":
			finished = true
		}
	}
	if err := s.Err(); err != nil {
		return out, classifyAnthropic(err, started)
	}
	if !finished {
		return out, &providerError{MidStream: started, Message: "the stream ended before message_stop"}
	}
	idx := make([]int64, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	for _, i := range idx {
		c := *calls[i]
		if c.Args == "" {
			// A tool_use with no input streams no input_json_delta at all.
			c.Args = "{}"
		}
		out.Calls = append(out.Calls, c)
	}
	return out, nil
}

func anthropicTool(t engine.ToolDescriptor) anthropic.ToolUnionParam {
	var schema map[string]any
	_ = json.Unmarshal(t.InputSchema, &schema)
	in := anthropic.ToolInputSchemaParam{ExtraFields: map[string]any{}}
	for k, v := range schema {
		switch k {
		case "properties":
			in.Properties = v
		case "required":
			if list, ok := v.([]any); ok {
				for _, r := range list {
					if s, ok := r.(string); ok {
						in.Required = append(in.Required, s)
					}
				}
			}
		case "type":
		default:
			in.ExtraFields[k] = v
		}
	}
	u := anthropic.ToolUnionParamOfTool(in, t.Name)
	u.OfTool.Description = anthropic.String(t.Description)
	return u
}

// anthropicMessages maps the conversation onto alternating user and
// assistant turns: tool results travel as tool_result blocks of a user turn,
// and adjacent turns of one role merge (Anthropic refuses two in a row).
func anthropicMessages(msgs []message) []anthropic.MessageParam {
	var out []anthropic.MessageParam
	add := func(role anthropic.MessageParamRole, blocks ...anthropic.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, anthropic.MessageParam{Role: role, Content: blocks})
	}
	for _, m := range msgs {
		switch m.Role {
		case roleUser:
			add(anthropic.MessageParamRoleUser, anthropic.NewTextBlock(m.Text))
		case roleTool:
			add(anthropic.MessageParamRoleUser, anthropic.NewToolResultBlock(m.ToolCallID, m.Text, m.IsError))
		case roleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			} else if len(m.ToolCalls) == 0 {
				// A turn that said nothing still happened; Anthropic refuses
				// empty text, so it is shown as a placeholder.
				blocks = append(blocks, anthropic.NewTextBlock("(no answer)"))
			}
			for _, c := range m.ToolCalls {
				var input any = map[string]any{}
				// Arguments that are not a JSON object (the model sent
				// garbage) are echoed as an empty object: the tool result
				// that follows tells the model what went wrong.
				var obj map[string]any
				if json.Unmarshal([]byte(c.Args), &obj) == nil && obj != nil {
					input = obj
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, input, c.Name))
			}
			add(anthropic.MessageParamRoleAssistant, blocks...)
		}
	}
	return out
}

// classifyAnthropic turns the SDK's error into a providerError.
func classifyAnthropic(err error, started bool) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		pe := &providerError{Status: apiErr.StatusCode, Message: anthropicMessage(apiErr.RawJSON()), err: err}
		if apiErr.Response != nil {
			pe.RetryAfter = retryAfter(apiErr.Response.Header)
		}
		if pe.Status == 0 {
			pe.MidStream = started
		}
		return pe
	}
	return &providerError{MidStream: started, Message: err.Error(), err: err}
}

// anthropicMessage digs the human message out of an error body
// ({"type":"error","error":{"type":…,"message":…}}), else returns it whole.
func anthropicMessage(raw string) string {
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &body) == nil && body.Error.Message != "" {
		if body.Error.Type != "" {
			return body.Error.Type + ": " + body.Error.Message
		}
		return body.Error.Message
	}
	return raw
}
