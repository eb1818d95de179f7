// Engines: serveEngine runs an Engine as a plugin process the host launches.
import * as grpc from "@grpc/grpc-js";
import { once } from "node:events";
import { Broker } from "./broker";
import { eventToWire, parseJSON, requestFromWire, resultToWire, toJSON, toolResultFromWire, Wire } from "./convert";
import { Code, PluginError, fromServiceError, toServiceError } from "./errors";
import { log } from "./log";
import { API_VERSION, servePlugin } from "./plugin";
import { channelOptions, services } from "./protos";
import type * as t from "./types";
import { Workspace } from "./workspace";

/** Host is what a run may do besides returning its result. */
export interface Host {
  /** emit reports an event; it waits only while the stream is full. */
  emit(event: t.EngineEvent): Promise<void>;
  /** callTool runs a host tool; the host emits the tool events itself. */
  callTool(call: t.ToolCall): Promise<t.ToolResult>;
  /** saveState records the engine's state durably; a resumed run gets it back. */
  saveState(state: Buffer | string): Promise<void>;
  /** requestPermission pauses the run until a person decides. */
  requestPermission(req: t.PermissionRequest): Promise<t.PermissionDecision>;
  /** the run's workspace, or null when the request named none */
  readonly workspace: Workspace | null;
}

/** Engine is an agent loop. Only info and run are required. */
export interface Engine {
  info(): t.PluginInfo;
  /** configure gets the HCL block's config; throw PluginError(Code.InvalidArgument) for unknown keys */
  configure?(config: Record<string, unknown>): void | Promise<void>;
  health?(): t.Health | Promise<t.Health>;
  /**
   * run does one run. `signal` aborts when the host cancels the run (answer
   * cancelled()) or drops it; throwing after the abort also counts as a
   * confirmed cancel.
   */
  run(req: t.RunRequest, host: Host, signal: AbortSignal): Promise<t.RunResult>;
}

/** CancelRequested is the abort reason of a run the host cancelled. */
export class CancelRequested extends Error {
  constructor() {
    super("run cancelled by the host");
    this.name = "CancelRequested";
  }
}

type Callback = grpc.sendUnaryData<Wire>;
type Unary = grpc.ServerUnaryCall<Wire, Wire>;

/** Callbacks are the host's services for this connection, from Configure. */
interface Callbacks {
  base: grpc.Client;
  host: Wire;
  workspace: Wire;
}

/** unary adapts an async handler to gRPC's callback form, errors included. */
function unary(fn: (req: Wire) => Promise<Wire> | Wire) {
  return (call: Unary, cb: Callback) => {
    Promise.resolve()
      .then(() => fn(call.request))
      .then((res) => cb(null, res), (err) => cb(toServiceError(err)));
  };
}

/** call makes a unary call on a proto-loader client as a promise. */
function call<T>(client: Wire, method: string, req: Wire): Promise<T> {
  return new Promise((resolve, reject) =>
    client[method](req, (err: grpc.ServiceError | null, res: T) => (err ? reject(fromServiceError(err)) : resolve(res))),
  );
}

class EngineServer {
  private callbacks: Callbacks | null = null;
  private runs = new Map<string, AbortController>();

  constructor(
    private readonly impl: Engine,
    private readonly broker: Broker,
  ) {}

  readonly service: grpc.UntypedServiceImplementation = {
    Info: unary(() => {
      const i = this.impl.info();
      return { name: i.name, kind: "engine", kindEnum: "PLUGIN_KIND_ENGINE", version: i.version, apiVersion: API_VERSION, description: i.description ?? "", capabilities: i.capabilities ?? {} };
    }),
    Configure: unary(async (req) => {
      const config = (parseJSON(req.configJson) ?? {}) as Record<string, unknown>;
      if (typeof config !== "object" || Array.isArray(config)) {
        throw new PluginError(Code.InvalidArgument, "config_json is not a JSON object");
      }
      await this.impl.configure?.(config);
      if (req.hostBrokerId) {
        const base = await this.broker.dial(req.hostBrokerId);
        const opts = { ...channelOptions, channelOverride: base.getChannel() };
        const old = this.callbacks;
        this.callbacks = {
          base,
          host: new services.agenthost.engine.v1.EngineHost("unused", grpc.credentials.createInsecure(), opts),
          workspace: new services.agenthost.workspace.v1.Workspace("unused", grpc.credentials.createInsecure(), opts),
        };
        old?.base.close();
      }
      return {};
    }),
    Health: unary(async () => {
      const h = (await this.impl.health?.()) ?? { healthy: true };
      return { healthy: h.healthy, reason: h.reason ?? "" };
    }),
    Cancel: unary((req) => {
      const run = this.runs.get(req.runId);
      run?.abort(new CancelRequested());
      return { found: run !== undefined };
    }),
    Run: (stream: grpc.ServerWritableStream<Wire, Wire>) => {
      this.run(stream).catch((err) => {
        log.error("run stream failed", { run_id: stream.request?.runId, error: String(err) });
        stream.destroy(err instanceof Error ? err : new Error(String(err)));
      });
    },
  };

  private async run(stream: grpc.ServerWritableStream<Wire, Wire>): Promise<void> {
    const req = requestFromWire(stream.request);
    const cb = this.callbacks;
    if (!cb) {
      stream.emit("error", toServiceError(new PluginError(Code.NotConfigured, "Run before Configure: the host has not offered its callback services")));
      return;
    }
    if (!req.runId || this.runs.has(req.runId)) {
      stream.emit("error", toServiceError(new PluginError(Code.InvalidArgument, `run id "${req.runId}" is empty or already running`, "run_id")));
      return;
    }
    const abort = new AbortController();
    this.runs.set(req.runId, abort);
    // The host dropping the stream (shutdown, a crash of its side) ends
    // the run too, unconfirmed.
    stream.on("cancelled", () => abort.abort(new Error("the host closed the run's stream")));

    let sent = 0;
    let finished = false;
    const write = async (update: Wire) => {
      if (!stream.write(update)) await once(stream, "drain");
    };
    const host: Host = {
      emit: async (e) => {
        if (finished) throw new Error("run has finished: no more events may be emitted");
        const wire = eventToWire(e);
        sent++;
        await write({ event: wire });
      },
      callTool: async (c) =>
        toolResultFromWire(
          await call(cb.host, "CallTool", { runId: req.runId, callId: c.callId, tool: c.tool, inputJson: toJSON(c.input), afterEvents: sent }),
        ),
      saveState: async (state) => {
        await call(cb.host, "SaveState", { runId: req.runId, state: Buffer.from(state), afterEvents: sent });
      },
      requestPermission: async (p) => {
        const d = await call<Wire>(cb.host, "RequestPermission", {
          runId: req.runId, permissionId: p.permissionId ?? "", action: p.action, title: p.title,
          detailsJson: toJSON(p.details), afterEvents: sent,
        });
        return { allow: d.allow, reason: d.reason };
      },
      workspace: req.workspaceId ? new Workspace(cb.workspace, req.workspaceId) : null,
    };

    let result: t.RunResult;
    try {
      result = await this.impl.run(req, host, abort.signal);
    } catch (err) {
      result = abort.signal.reason instanceof CancelRequested
        ? { status: "cancelled" }
        : { status: "failed", errorCode: Code.EngineError, errorMessage: err instanceof Error ? err.message : String(err) };
    } finally {
      finished = true;
      // Forget the run before the host can see its result: a Cancel after
      // that must answer found=false.
      this.runs.delete(req.runId);
    }
    if (!result?.status) {
      result = { status: "failed", errorCode: Code.EngineError, errorMessage: "engine returned a result without a status" };
    }
    if (stream.cancelled) return;
    await write({ result: resultToWire(result) });
    stream.end();
  }
}

/**
 * serveEngine runs engine as an agenthost engine plugin: call it from the
 * program's entry point. It returns once the plugin is serving; the process
 * then lives until the host stops it.
 */
export function serveEngine(engine: Engine): Promise<void> {
  return servePlugin(({ server, broker }) => {
    server.addService(services.agenthost.engine.v1.Engine.service, new EngineServer(engine, broker).service);
  });
}
