// Between the messages proto-loader gives (lowerCamelCase, bytes as Buffers,
// zero values filled in) and the SDK's types.
import type * as t from "./types";

/** Wire is a message as proto-loader represents it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Wire = any;

/** parseJSON reads JSON text carried in a bytes field; empty is undefined. */
export function parseJSON(b: Buffer | null | undefined): unknown {
  if (!b || b.length === 0) return undefined;
  return JSON.parse(b.toString("utf8"));
}

/** toJSON writes a value as JSON text for a bytes field; undefined is empty. */
export function toJSON(v: unknown): Buffer {
  return v === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(v), "utf8");
}

/**
 * roles reads Message.role_enum. Closed sets travel twice (docs/plugin-protocol.md,
 * section 8): a typed enum, preferred when known, and the string older peers send.
 */
const roles: Record<string, t.Message["role"]> = {
  ROLE_SYSTEM: "system",
  ROLE_USER: "user",
  ROLE_ASSISTANT: "assistant",
};

export function requestFromWire(r: Wire): t.RunRequest {
  const m = r.model ?? {};
  const l = r.limits ?? {};
  return {
    runId: r.runId,
    appId: r.appId,
    chatSessionId: r.chatSessionId,
    prompt: r.prompt,
    history: (r.history ?? []).map((h: Wire) => ({ role: roles[h.roleEnum] ?? h.role, content: h.content })),
    model: {
      id: m.id ?? "",
      provider: m.provider ?? "",
      providerModel: m.providerModel ?? "",
      baseUrl: m.baseUrl ?? "",
      apiKeyEnv: m.apiKeyEnv ?? "",
      engineModelId: m.engineModelId ?? "",
    },
    tools: (r.tools ?? []).map((d: Wire) => ({
      name: d.name,
      description: d.description,
      inputSchema: parseJSON(d.inputSchemaJson),
    })),
    context: parseJSON(r.contextJson) ?? null,
    state: r.state && r.state.length > 0 ? r.state : null,
    workspaceId: r.workspaceId,
    limits: {
      maxToolIterations: l.maxToolIterations ?? 0,
      toolTimeoutMs: l.toolTimeoutMs ?? 0,
      tokenBudget: l.tokenBudget ?? 0,
    },
  };
}

export function eventToWire(e: t.EngineEvent): Wire {
  switch (e.kind) {
    case "assistant.delta":
      return { assistantDelta: { text: e.text } };
    case "run.status":
      return { status: { stage: e.stage, message: e.message ?? "" } };
    case "reasoning":
      return { reasoning: { text: e.text } };
    case "usage":
      return { usage: { inputTokens: e.inputTokens, outputTokens: e.outputTokens } };
    case "tool.started":
      return { toolStarted: { callId: e.callId, tool: e.tool, inputJson: toJSON(e.input) } };
    case "tool.finished":
      return {
        toolFinished: {
          callId: e.callId,
          tool: e.tool,
          ok: e.ok,
          outputJson: toJSON(e.output),
          errorCode: e.errorCode ?? "",
          errorMessage: e.errorMessage ?? "",
          diagnosticsJson: toJSON(e.diagnostics),
        },
      };
  }
  throw new Error(`unknown event kind ${(e as { kind: string }).kind}`);
}

export function resultToWire(r: t.RunResult): Wire {
  return {
    status: r.status,
    statusEnum: `RUN_STATUS_${r.status.toUpperCase()}`,
    errorCode: r.errorCode ?? "",
    errorMessage: r.errorMessage ?? "",
    diagnosticsJson: toJSON(r.diagnostics),
    outputText: r.outputText ?? "",
    pauseReason: r.pauseReason ?? "",
  };
}

export function toolResultFromWire(r: Wire): t.ToolResult {
  if (r.ok) return { ok: true, output: parseJSON(r.outputJson) };
  const e = r.error ?? {};
  return {
    ok: false,
    error: { code: e.code ?? "", message: e.message ?? "", field: e.field ?? "", diagnostics: parseJSON(e.diagnosticsJson) },
  };
}
