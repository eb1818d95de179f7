// The plugin's entry point: the host launches `node agenthost-engine-echo-ts.js`.
import { serveEngine } from "@agenthost/sdk";
import { echo } from "./echo";

serveEngine(echo).catch((err) => {
  process.stderr.write(`echo-ts: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
