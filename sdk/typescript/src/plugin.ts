// Serving a plugin as go-plugin's host expects: the magic cookie, the
// protocol version, AutoMTLS, the health and controller services, the broker,
// and the handshake line on stdout. docs/plugin-protocol.md describes each.
import * as grpc from "@grpc/grpc-js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "./broker";
import { log } from "./log";
import { generateCertificate } from "./mtls";
import { channelOptions, services } from "./protos";

/** The magic cookie the host sets; anything else means "not launched by agenthost". */
export const MAGIC_COOKIE_KEY = "AGENTHOST_PLUGIN";
export const MAGIC_COOKIE_VALUE = "a7c1d9e4-agenthost-plugin-v1";
/** The one app protocol version this SDK speaks (the host's plugin.APIVersion). */
export const API_VERSION = 1;

/** How long a graceful stop may take before the plugin exits anyway (the host kills at 2 s). */
const STOP_GRACE_MS = 1_500;

/** Served is what a kind's serve function gets to register its service. */
export interface Served {
  server: grpc.Server;
  broker: Broker;
}

/** fatal explains a launch the plugin cannot serve and exits non-zero. */
function fatal(message: string): never {
  process.stderr.write(message + "\n");
  process.exit(1);
}

/**
 * servePlugin checks the launch, starts the gRPC server with the kind's
 * services (register), prints the handshake line and keeps serving until
 * the host stops the plugin.
 */
export async function servePlugin(register: (s: Served) => void): Promise<void> {
  if (process.env[MAGIC_COOKIE_KEY] !== MAGIC_COOKIE_VALUE) {
    fatal("This program is an agenthost plugin: the agenthost host launches it (see plugin-configs/). It is not meant to be run by hand.");
  }
  const offered = (process.env.PLUGIN_PROTOCOL_VERSIONS ?? "").split(",").map((v) => v.trim());
  if (!offered.includes(String(API_VERSION))) {
    fatal(`The host speaks plugin protocol versions [${offered.join(", ")}]; this plugin speaks ${API_VERSION}. Upgrade the one that is older.`);
  }
  const hostCert = process.env.PLUGIN_CLIENT_CERT;
  if (!hostCert) {
    fatal("PLUGIN_CLIENT_CERT is not set: the host must launch plugins with AutoMTLS.");
  }
  const own = generateCertificate();
  const server = new grpc.Server(channelOptions);
  const broker = new Broker(grpc.credentials.createSsl(Buffer.from(hostCert), own.keyPem, own.certPem));

  const health = services.grpc.health.v1.Health.service;
  server.addService(health, {
    Check: (_call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => cb(null, { status: "SERVING" }),
  });
  server.addService(services.plugin.GRPCBroker.service, broker.service);
  server.addService(services.plugin.GRPCController.service, {
    Shutdown: (_call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      cb(null, {});
      stop(server);
    },
  });
  register({ server, broker });

  const dir = mkdtempSync(join(process.env.PLUGIN_UNIX_SOCKET_DIR || tmpdir(), "agenthost-plugin-"));
  const socket = join(dir, "plugin.sock");
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  // A Ctrl-C in the host's terminal reaches the plugin's process group too;
  // the host decides when the plugin stops.
  process.on("SIGINT", () => undefined);
  process.on("SIGTERM", () => stop(server));

  const creds = grpc.ServerCredentials.createSsl(Buffer.from(hostCert), [{ private_key: own.keyPem, cert_chain: own.certPem }], true);
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${socket}`, creds, (err) => (err ? reject(err) : resolve())),
  );
  const cert = own.certDer.toString("base64").replace(/=+$/, "");
  process.stdout.write(`1|${API_VERSION}|unix|${socket}|grpc|${cert}\n`);
  // Nothing else may reach stdout: a stray console.log goes to stderr.
  console.log = console.info = (...args: unknown[]) => log.info(args.map(String).join(" "));
}

let stopping = false;

/** stop ends the server gracefully, then the process. */
function stop(server: grpc.Server): void {
  if (stopping) return;
  stopping = true;
  const timer = setTimeout(() => process.exit(0), STOP_GRACE_MS);
  server.tryShutdown(() => {
    clearTimeout(timer);
    process.exit(0);
  });
}
