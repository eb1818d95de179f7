package orchestrator

import (
	"encoding/json"

	"github.com/agenthost/agenthost/core"
)

// The payloads of the tool.* events the host emits. tool.started carries
// the call's input and tool.completed its output, which may be large (an
// apply_patch of a big patch, a read_file of a big file). encoding/json
// compacts a json.RawMessage it marshals with its scanner, about 8 ns a
// byte here: 0.5 ms for a 64 KiB input, on top of the checks the host has
// already made of it. These payloads are built by hand instead, with
// core.AppendCompactJSON, into exactly the bytes json.Marshal of the map
// they replaced gave (keys in name order).

// toolStartedPayload is tool.started's payload. input must be valid JSON:
// CallTool makes it so, and engines' events pass jsonOrNull.
func toolStartedPayload(callID, tool string, input json.RawMessage) json.RawMessage {
	return toolPayload(`{"input":`, input, tool, callID)
}

// toolCompletedPayload is tool.completed's payload. output must be valid
// JSON (jsonOrNull).
func toolCompletedPayload(callID, tool string, output json.RawMessage) json.RawMessage {
	return toolPayload(`{"output":`, output, tool, callID)
}

// toolPayload is {<key>:<raw>,"tool":<tool>,"tool_call_id":<callID>}, open
// being the object's start up to raw.
func toolPayload(open string, raw json.RawMessage, tool, callID string) json.RawMessage {
	b := make([]byte, 0, len(open)+len(raw)+len(tool)+len(callID)+32)
	b = append(b, open...)
	b = core.AppendCompactJSON(b, raw)
	b = append(b, `,"tool":`...)
	b = core.AppendJSONString(b, tool)
	b = append(b, `,"tool_call_id":`...)
	b = core.AppendJSONString(b, callID)
	return append(b, '}')
}

// toolFailed is tool.failed's payload (fields in name order, as the map
// it replaced marshalled them). It holds no raw JSON, so json.Marshal is
// cheap for it.
type toolFailed struct {
	ErrorCode    string `json:"error_code"`
	ErrorMessage string `json:"error_message"`
	Field        string `json:"field"`
	Tool         string `json:"tool"`
	CallID       string `json:"tool_call_id"`
}
