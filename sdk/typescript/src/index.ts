// @agenthost/sdk: write agenthost engine plugins in TypeScript.
//
//   import { serveEngine, completed } from "@agenthost/sdk";
//   serveEngine({ info: () => ({ name: "hello", version: "0.1.0" }),
//     async run(req, host) { await host.emit(delta("hi")); return completed(); } });
export { serveEngine, CancelRequested } from "./engine";
export type { Engine, Host } from "./engine";
export { Code, PluginError } from "./errors";
export { log } from "./log";
export type { Logger } from "./log";
export { API_VERSION, MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE } from "./plugin";
export { Workspace } from "./workspace";
export type { ExecOptions, ExecResult, FileInfo } from "./workspace";
export * from "./types";
