// The echo engine in TypeScript: it follows a script in the prompt, one
// command per line (say TEXT, tool NAME JSON, ask ACTION, save STATE,
// read PATH, fail CODE, wait), and passes the whole engine kit.
import { Code, Engine, PluginError, cancelled, completed, delta, failed } from "@agenthost/sdk";

export const echo: Engine = {
  info: () => ({ name: "echo-ts", version: "0.1.0", description: "follows a script in the prompt" }),

  configure(config) {
    const unknown = Object.keys(config);
    if (unknown.length > 0) throw new PluginError(Code.InvalidArgument, `unknown config keys: ${unknown.join(", ")}`, unknown[0]);
  },

  async run(req, host, signal) {
    try {
      for (const [i, line] of req.prompt.split("\n").entries()) {
        const [verb, ...rest] = line.split(" ");
        const arg = rest.join(" ");
        if (verb === "say") await host.emit(delta(arg));
        if (verb === "tool") await host.callTool({ callId: String(i), tool: rest[0], input: JSON.parse(rest.slice(1).join(" ") || "{}") });
        if (verb === "ask") await host.requestPermission({ action: arg, title: `Allow ${arg}?` });
        if (verb === "save") await host.saveState(arg);
        if (verb === "read") await host.emit(delta((await host.workspace!.readFile(arg)).toString()));
        if (verb === "fail") return failed(arg, "the script failed the run");
        if (verb === "wait" && !signal.aborted) await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
        if (signal.aborted) return cancelled();
      }
      return completed();
    } catch (err) {
      // A refusal from the host (a path outside the workspace, a missing
      // file) ends the run with the host's own code.
      if (err instanceof PluginError) return failed(err.code, err.message);
      throw err;
    }
  },
};
