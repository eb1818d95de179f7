package fakellm

import (
	"net/http"
	"time"
)

// openAI answers POST /v1/chat/completions with chat.completion.chunk
// events: role, reasoning_content, content pieces, tool_calls deltas (id and
// name first, then argument pieces), a finish_reason chunk, a usage chunk
// (stream_options.include_usage) and [DONE].
func (s *Server) openAI(w http.ResponseWriter, r *http.Request) {
	t, n, ok := s.pick(w, r, bearer(r.Header.Get("Authorization")))
	if !ok {
		return
	}
	st := newStreamer(w, r, t.CutAfter)
	created := time.Now().Unix()
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": created, "model": "fake",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	if !st.send("", chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	if t.Reasoning != "" && !st.send("", chunk(map[string]any{"reasoning_content": t.Reasoning}, nil)) {
		return
	}
	for _, piece := range t.Text {
		if !st.send("", chunk(map[string]any{"content": piece}, nil)) {
			return
		}
	}
	if !t.stamps(func(p string) bool { return st.send("", chunk(map[string]any{"content": p}, nil)) }) {
		return
	}
	if t.Hang {
		st.hang()
		return
	}
	for i, c := range t.Calls {
		id := c.ID
		if id == "" {
			id = CallID("call", n, i)
		}
		head := map[string]any{"index": i, "id": id, "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""}}
		if !st.send("", chunk(map[string]any{"tool_calls": []any{head}}, nil)) {
			return
		}
		for _, a := range c.Args {
			part := map[string]any{"index": i, "function": map[string]any{"arguments": a}}
			if !st.send("", chunk(map[string]any{"tool_calls": []any{part}}, nil)) {
				return
			}
		}
	}
	finish := "stop"
	if len(t.Calls) > 0 {
		finish = "tool_calls"
	}
	if !st.send("", chunk(map[string]any{}, finish)) {
		return
	}
	in, out := t.usage()
	if !st.send("", map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": created, "model": "fake",
		"choices": []any{}, "usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}}) {
		return
	}
	st.send("", "[DONE]")
}

// anthropic answers POST /v1/messages with message_start, a thinking block,
// a text block (text_delta), tool_use blocks (input_json_delta),
// message_delta (stop_reason, output usage) and message_stop.
func (s *Server) anthropic(w http.ResponseWriter, r *http.Request) {
	t, n, ok := s.pick(w, r, r.Header.Get("X-Api-Key"))
	if !ok {
		return
	}
	st := newStreamer(w, r, t.CutAfter)
	in, out := t.usage()
	if !st.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": "fake", "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": in, "output_tokens": 1},
	}}) {
		return
	}
	idx := 0
	block := func(start map[string]any, deltas []map[string]any) bool {
		if !st.send("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": start}) {
			return false
		}
		for _, d := range deltas {
			if !st.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": d}) {
				return false
			}
		}
		ok := st.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
		return ok
	}
	if t.Reasoning != "" && !block(map[string]any{"type": "thinking", "thinking": ""},
		[]map[string]any{{"type": "thinking_delta", "thinking": t.Reasoning}}) {
		return
	}
	if len(t.Text) > 0 || t.Stamps > 0 || t.Hang {
		if !st.send("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "text", "text": ""}}) {
			return
		}
		text := func(p string) bool {
			return st.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "text_delta", "text": p}})
		}
		for _, p := range t.Text {
			if !text(p) {
				return
			}
		}
		if !t.stamps(text) {
			return
		}
		if t.Hang {
			st.hang()
			return
		}
		if !st.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx}) {
			return
		}
		idx++
	}
	for i, c := range t.Calls {
		id := c.ID
		if id == "" {
			id = CallID("toolu", n, i)
		}
		deltas := make([]map[string]any, 0, len(c.Args))
		for _, a := range c.Args {
			deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": a})
		}
		if !block(map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": map[string]any{}}, deltas) {
			return
		}
	}
	stop := "end_turn"
	if len(t.Calls) > 0 {
		stop = "tool_use"
	}
	if !st.send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": out}}) {
		return
	}
	st.send("message_stop", map[string]any{"type": "message_stop"})
}
