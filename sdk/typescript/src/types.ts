// What an engine sees and says, in JavaScript's shape. The field meanings are
// those of sdk/proto/agenthost/engine/v1/engine.proto; JSON carried in bytes
// fields arrives parsed and leaves serialised.

/** PluginInfo names the plugin to the host; `name` must equal its HCL block's label. */
export interface PluginInfo {
  name: string;
  version: string;
  description?: string;
  /** free-form capability flags (docs/plugins.md) */
  capabilities?: Record<string, string>;
}

/** Health is the answer to the host's periodic health check. */
export interface Health {
  healthy: boolean;
  /** why not, in words an operator can act on */
  reason?: string;
}

/** Message is one turn of the conversation history. */
export interface Message {
  role: "system" | "user" | "assistant";
  content: string;
}

/** Model is the model pinned on the run and how to reach it. */
export interface Model {
  id: string;
  provider: string;
  providerModel: string;
  baseUrl: string;
  /** the name of the environment variable holding the key; never the key */
  apiKeyEnv: string;
  engineModelId: string;
}

/** Limits bound a run. */
export interface Limits {
  maxToolIterations: number;
  toolTimeoutMs: number;
  tokenBudget: number;
}

/** ToolDescriptor is what the engine tells its model about a tool. */
export interface ToolDescriptor {
  name: string;
  description: string;
  /** the tool's input JSON Schema */
  inputSchema: unknown;
}

/** RunRequest is everything an engine gets to do one run. */
export interface RunRequest {
  runId: string;
  appId: string;
  chatSessionId: string;
  prompt: string;
  history: Message[];
  model: Model;
  tools: ToolDescriptor[];
  /** the run context (selected-agent contract, policy), or null */
  context: unknown;
  /** the engine's last saved state when the run is resumed, else null */
  state: Buffer | null;
  workspaceId: string;
  limits: Limits;
}

/** EngineEvent is one thing the engine reports while it runs. */
export type EngineEvent =
  | { kind: "assistant.delta"; text: string }
  | { kind: "run.status"; stage: string; message?: string }
  | { kind: "reasoning"; text: string }
  | { kind: "usage"; inputTokens: number; outputTokens: number }
  /** a tool the engine runs itself (not the host's callTool) */
  | { kind: "tool.started"; callId: string; tool: string; input?: unknown }
  | {
      kind: "tool.finished";
      callId: string;
      tool: string;
      ok: boolean;
      output?: unknown;
      errorCode?: string;
      errorMessage?: string;
      diagnostics?: unknown;
    };

/** RunResult is how a run ended, as the engine sees it. */
export interface RunResult {
  status: "completed" | "failed" | "cancelled" | "paused";
  errorCode?: string;
  errorMessage?: string;
  diagnostics?: unknown;
  /** the final assistant text; the host shows it when nothing was streamed */
  outputText?: string;
  /** why a paused run stopped, e.g. "token_budget" */
  pauseReason?: string;
}

/** ToolCall asks the host to run one tool. */
export interface ToolCall {
  /** the engine's id for the call, unique within the run */
  callId: string;
  tool: string;
  /** the input, serialised as JSON */
  input: unknown;
}

/** ToolResult is a tool's outcome; a failed tool is a result, not an error. */
export interface ToolResult {
  ok: boolean;
  output?: unknown;
  error?: { code: string; message: string; field?: string; diagnostics?: unknown };
}

/** PermissionRequest pauses the run until a person decides. */
export interface PermissionRequest {
  /** optional; the host picks one when empty */
  permissionId?: string;
  action: string;
  title: string;
  details?: unknown;
}

/** PermissionDecision is what the person decided. */
export interface PermissionDecision {
  allow: boolean;
  reason: string;
}

/** The event constructors, as in the Go SDK. */
export const delta = (text: string): EngineEvent => ({ kind: "assistant.delta", text });
export const status = (stage: string, message = ""): EngineEvent => ({ kind: "run.status", stage, message });

/** The result constructors. */
export const completed = (outputText = ""): RunResult => ({ status: "completed", outputText });
export const failed = (errorCode: string, errorMessage: string): RunResult => ({ status: "failed", errorCode, errorMessage });
export const cancelled = (): RunResult => ({ status: "cancelled" });
export const paused = (pauseReason: string): RunResult => ({ status: "paused", pauseReason });
