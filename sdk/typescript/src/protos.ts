// The protos, loaded once from the JSON descriptor scripts/protos.mjs made.
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import protobuf from "protobufjs";
import json from "./generated/protos.json";

/** descriptor is every proto, as protobufjs JSON (scripts/protos.mjs). */
const descriptor = json as unknown as protobuf.INamespace;

/**
 * loaderOptions decide how messages look in JavaScript: fields in
 * lowerCamelCase, 64-bit integers as numbers (counts and milliseconds, far
 * below 2^53), bytes as Buffers, enums as their names, unset fields as their
 * zero values, and a oneof's set member named in a virtual field.
 */
const loaderOptions: protoLoader.Options = {
  keepCase: false,
  longs: Number,
  enums: String,
  bytes: Buffer,
  defaults: true,
  oneofs: true,
};

/** root is the protobufjs view, for encoding messages by hand (error details). */
export const root = protobuf.Root.fromJSON(descriptor);

/** services holds every service's client constructor and definition. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const services = grpc.loadPackageDefinition(protoLoader.fromJSON(descriptor, loaderOptions)) as any;

/** MAX_MESSAGE_BYTES matches the host's limit (plugin.MaxMessageBytes). */
export const MAX_MESSAGE_BYTES = 64 << 20;

/** channelOptions raise gRPC's 4 MiB default to the host's limit. */
export const channelOptions: grpc.ChannelOptions = {
  "grpc.max_receive_message_length": MAX_MESSAGE_BYTES,
  "grpc.max_send_message_length": MAX_MESSAGE_BYTES,
};
