// Logs go to stderr as hclog JSON lines, so the host keeps their level and
// fields under the plugin's name. Stdout belongs to the handshake line.

/** Logger writes one JSON line per call. */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

function write(level: string, message: string, fields?: Record<string, unknown>): void {
  const line = { ...fields, "@level": level, "@message": message, "@timestamp": new Date().toISOString() };
  process.stderr.write(JSON.stringify(line) + "\n");
}

/** log is the plugin's logger. */
export const log: Logger = {
  debug: (m, f) => write("debug", m, f),
  info: (m, f) => write("info", m, f),
  warn: (m, f) => write("warn", m, f),
  error: (m, f) => write("error", m, f),
};
