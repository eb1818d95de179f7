// The broker, the plugin's side. The host opens GRPCBroker/StartStream right
// after the handshake and sends, for each callback server it starts, the
// address it listens on (ConnInfo). Configure then names the id to use. The
// two may arrive in either order, so offers are kept until asked for.
import * as grpc from "@grpc/grpc-js";
import { channelOptions } from "./protos";
import { PluginError, Code } from "./errors";

/** ConnInfo is the host's offer of one callback server. */
export interface ConnInfo {
  serviceId: number;
  network: string;
  address: string;
}

/** How long to wait for the host's offer of an id it has named. */
const DIAL_TIMEOUT_MS = 5_000;

/** Broker keeps the host's offers and dials them with the plugin's TLS identity. */
export class Broker {
  private offers = new Map<number, ConnInfo>();
  private waiting = new Map<number, ((c: ConnInfo) => void)[]>();

  constructor(private readonly credentials: grpc.ChannelCredentials) {}

  /** service is the GRPCBroker implementation to add to the plugin's server. */
  readonly service: grpc.UntypedServiceImplementation = {
    StartStream: (call: grpc.ServerDuplexStream<ConnInfo, ConnInfo>) => {
      call.on("data", (c: ConnInfo) => this.offer(c));
      // The stream lives as long as the host; its end needs no answer
      // beyond closing our side.
      call.on("end", () => call.end());
      call.on("error", () => undefined);
    },
  };

  private offer(c: ConnInfo): void {
    this.offers.set(c.serviceId, c);
    for (const resolve of this.waiting.get(c.serviceId) ?? []) resolve(c);
    this.waiting.delete(c.serviceId);
  }

  private await(id: number): Promise<ConnInfo> {
    const known = this.offers.get(id);
    if (known) return Promise.resolve(known);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new PluginError(Code.Unavailable, `the host offered no broker connection ${id} within ${DIAL_TIMEOUT_MS} ms`));
      }, DIAL_TIMEOUT_MS);
      const list = this.waiting.get(id) ?? [];
      list.push((c) => {
        clearTimeout(timer);
        resolve(c);
      });
      this.waiting.set(id, list);
    });
  }

  /**
   * dial connects to the host's callback server with this id and returns a
   * client whose channel the service clients share (channelOverride).
   */
  async dial(id: number): Promise<grpc.Client> {
    const c = await this.await(id);
    let target: string;
    if (c.network === "unix") target = `unix://${c.address}`;
    else if (c.network === "tcp") target = c.address;
    else throw new PluginError(Code.Unsupported, `the host offered a ${c.network} connection; only unix and tcp are known`);
    return new grpc.Client(target, this.credentials, {
      ...channelOptions,
      // The host's certificate is for "localhost", whatever the address.
      "grpc.ssl_target_name_override": "localhost",
      "grpc.default_authority": "localhost",
    });
  }
}
