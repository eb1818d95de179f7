// The run's workspace, through the host (agenthost.workspace.v1.Workspace on
// the broker connection). Paths are relative to the workspace root, with
// forward slashes; the host refuses any that would leave it.
import type * as grpc from "@grpc/grpc-js";
import type { Wire } from "./convert";
import { fromServiceError } from "./errors";

/** FileInfo describes one file or folder. */
export interface FileInfo {
  path: string;
  size: number;
  /** hex sha256, when asked for */
  sha256: string;
  isDir: boolean;
  mode: number;
  modTimeUnixNano: number;
}

/** ExecResult is a finished command. */
export interface ExecResult {
  exitCode: number;
  stdout: Buffer;
  stderr: Buffer;
  timedOut: boolean;
  outputTruncated: boolean;
  /** the signal that ended it, if any */
  signal: string;
  durationMs: number;
}

/** ExecOptions tune one command. */
export interface ExecOptions {
  dir?: string;
  /** extra KEY=VALUE entries */
  env?: string[];
  timeoutMs?: number;
  outputLimitBytes?: number;
  stdin?: Buffer | string;
}

/** The size of the chunks writeFile sends. */
const CHUNK_BYTES = 256 << 10;

const fileInfo = (f: Wire): FileInfo => ({
  path: f.path, size: f.size, sha256: f.sha256, isDir: f.isDir, mode: f.mode, modTimeUnixNano: f.modTimeUnixNano,
});

/** Workspace is one workspace's file and process API. */
export class Workspace {
  constructor(
    private readonly client: Wire,
    readonly id: string,
  ) {}

  private unary<T>(method: string, req: Wire): Promise<T> {
    return new Promise((resolve, reject) =>
      this.client[method]({ workspaceId: this.id, ...req }, (err: grpc.ServiceError | null, res: T) =>
        err ? reject(fromServiceError(err)) : resolve(res),
      ),
    );
  }

  private async collect(method: string, req: Wire, each: (m: Wire) => void): Promise<void> {
    const stream = this.client[method]({ workspaceId: this.id, ...req });
    try {
      for await (const m of stream) each(m);
    } catch (err) {
      throw fromServiceError(err);
    }
  }

  /** readFile returns a file's bytes (or lines startLine..endLine, 1-based). */
  async readFile(path: string, lines?: { startLine?: number; endLine?: number }): Promise<Buffer> {
    const parts: Buffer[] = [];
    await this.collect("ReadFile", { path, ...lines }, (m) => parts.push(m.data));
    return Buffer.concat(parts);
  }

  /** writeFile creates or replaces a file (mode 0644 unless given). */
  writeFile(path: string, data: Buffer | string, mode = 0): Promise<FileInfo> {
    return new Promise((resolve, reject) => {
      const stream = this.client.WriteFile((err: grpc.ServiceError | null, res: Wire) =>
        err ? reject(fromServiceError(err)) : resolve(fileInfo(res)),
      );
      stream.write({ header: { workspaceId: this.id, path, mode } });
      const bytes = Buffer.from(data);
      for (let i = 0; i < bytes.length; i += CHUNK_BYTES) stream.write({ data: bytes.subarray(i, i + CHUNK_BYTES) });
      stream.end();
    });
  }

  /** list lists a folder ("" is the root). */
  async list(path = "", opts: { recursive?: boolean; withHashes?: boolean; limit?: number; skipDirs?: string[] } = {}): Promise<{ entries: FileInfo[]; truncated: boolean }> {
    const res = await this.unary<Wire>("List", { path, ...opts });
    return { entries: res.entries.map(fileInfo), truncated: res.truncated };
  }

  async stat(path: string): Promise<FileInfo> {
    return fileInfo(await this.unary<Wire>("Stat", { path }));
  }

  async remove(path: string, recursive = false): Promise<void> {
    await this.unary("Remove", { path, recursive });
  }

  async rename(from: string, to: string): Promise<void> {
    await this.unary("Rename", { from, to });
  }

  /** exec runs argv in the workspace and waits for it to end. */
  async exec(argv: string[], opts: ExecOptions = {}): Promise<ExecResult> {
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let exit: Wire = {};
    await this.collect(
      "Exec",
      { argv, dir: opts.dir ?? "", env: opts.env ?? [], timeoutMs: opts.timeoutMs ?? 0, outputLimitBytes: opts.outputLimitBytes ?? 0, stdin: Buffer.from(opts.stdin ?? "") },
      (m) => {
        if (m.event === "stdout") stdout.push(m.stdout);
        else if (m.event === "stderr") stderr.push(m.stderr);
        else if (m.event === "exit") exit = m.exit;
      },
    );
    return {
      exitCode: exit.exitCode ?? -1, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr), timedOut: !!exit.timedOut,
      outputTruncated: !!exit.outputTruncated, signal: exit.signal ?? "", durationMs: exit.durationMs ?? 0,
    };
  }
}
