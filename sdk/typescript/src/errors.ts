// Errors across the wire: a failed call is a gRPC status whose
// grpc-status-details-bin trailer holds a google.rpc.Status with an ErrorInfo
// detail (domain "agenthost", reason = our code, metadata "field"). The host
// reads the code from there, whatever the gRPC status code.
import * as grpc from "@grpc/grpc-js";
import { root } from "./protos";

const DOMAIN = "agenthost";
const DETAILS_KEY = "grpc-status-details-bin";
const ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo";

/** Codes the host knows (sdk/plugin/errors.go); a plugin may use others. */
export const Code = {
  NotFound: "NOT_FOUND",
  PathDenied: "WORKSPACE_PATH_DENIED",
  InvalidArgument: "INVALID_ARGUMENT",
  IsDirectory: "IS_DIRECTORY",
  AlreadyExists: "ALREADY_EXISTS",
  TooLarge: "TOO_LARGE",
  NotConfigured: "NOT_CONFIGURED",
  Unavailable: "UNAVAILABLE",
  Unsupported: "UNSUPPORTED",
  Internal: "INTERNAL",
  EngineError: "ENGINE_ERROR",
} as const;

/** PluginError is a failure with a stable code, in either direction. */
export class PluginError extends Error {
  constructor(
    readonly code: string,
    message: string,
    /** the input field at fault, if any */
    readonly field = "",
  ) {
    super(message);
    this.name = "PluginError";
  }
}

const grpcCodes: Record<string, grpc.status> = {
  [Code.NotFound]: grpc.status.NOT_FOUND,
  [Code.PathDenied]: grpc.status.PERMISSION_DENIED,
  [Code.InvalidArgument]: grpc.status.INVALID_ARGUMENT,
  [Code.IsDirectory]: grpc.status.FAILED_PRECONDITION,
  [Code.AlreadyExists]: grpc.status.ALREADY_EXISTS,
  [Code.TooLarge]: grpc.status.RESOURCE_EXHAUSTED,
  [Code.NotConfigured]: grpc.status.FAILED_PRECONDITION,
  [Code.Unavailable]: grpc.status.UNAVAILABLE,
  [Code.Unsupported]: grpc.status.UNIMPLEMENTED,
};

/** toServiceError turns anything thrown by a handler into what gRPC sends. */
export function toServiceError(err: unknown): Partial<grpc.StatusObject> {
  if (!(err instanceof PluginError)) {
    return { code: grpc.status.INTERNAL, details: err instanceof Error ? err.message : String(err) };
  }
  const code = grpcCodes[err.code] ?? grpc.status.UNKNOWN;
  const ErrorInfo = root.lookupType("google.rpc.ErrorInfo");
  const Status = root.lookupType("google.rpc.Status");
  const info = ErrorInfo.encode(
    ErrorInfo.fromObject({ reason: err.code, domain: DOMAIN, metadata: err.field ? { field: err.field } : {} }),
  ).finish();
  // google.protobuf.Any comes from protobufjs's own definitions, whose field
  // names keep their snake_case (ours are lowerCamelCase).
  const status = Status.encode(
    Status.fromObject({ code, message: err.message, details: [{ type_url: ERROR_INFO_TYPE, value: info }] }),
  ).finish();
  const metadata = new grpc.Metadata();
  metadata.set(DETAILS_KEY, Buffer.from(status));
  return { code, details: err.message, metadata };
}

/**
 * fromServiceError reads a failed call's error: a PluginError when it carries
 * an agenthost code, else the gRPC error itself (a broken connection).
 */
export function fromServiceError(err: unknown): Error {
  const se = err as grpc.ServiceError;
  const raw = se?.metadata?.get(DETAILS_KEY)?.[0];
  if (!raw || typeof raw === "string") return se instanceof Error ? se : new Error(String(err));
  try {
    const Status = root.lookupType("google.rpc.Status");
    const ErrorInfo = root.lookupType("google.rpc.ErrorInfo");
    const status = Status.toObject(Status.decode(raw)) as { message?: string; details?: { type_url: string; value: Uint8Array }[] };
    for (const d of status.details ?? []) {
      if (d.type_url !== ERROR_INFO_TYPE) continue;
      const info = ErrorInfo.toObject(ErrorInfo.decode(d.value)) as { reason: string; domain: string; metadata?: Record<string, string> };
      if (info.domain === DOMAIN) return new PluginError(info.reason, status.message ?? se.details, info.metadata?.field ?? "");
    }
  } catch {
    // Undecodable details: the plain gRPC error below says what happened.
  }
  return se;
}
