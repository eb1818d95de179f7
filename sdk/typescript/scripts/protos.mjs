// Bundles every proto the SDK speaks into one JSON descriptor
// (src/generated/protos.json): agenthost's own protos from sdk/proto, and
// this package's definitions of go-plugin's, gRPC health's and google.rpc's
// wire messages from proto/. The SDK loads the JSON at run time, so a plugin
// bundled into one file needs no .proto files beside it.
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";

const here = dirname(fileURLToPath(import.meta.url));
const roots = [join(here, "..", "..", "proto"), join(here, "..", "proto")];

function protoFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? protoFiles(join(dir, e.name)) : e.name.endsWith(".proto") ? [join(dir, e.name)] : [],
  );
}

const root = new protobuf.Root();
// Imports such as "agenthost/plugin/v1/plugin.proto" resolve against the
// include roots; google/protobuf/*.proto are protobufjs's own.
root.resolvePath = (origin, target) => {
  for (const r of roots) {
    const candidate = join(r, target);
    if (protoFiles(r).includes(candidate)) return candidate;
  }
  return protobuf.util.path.resolve(origin, target);
};
const files = roots.flatMap((r) => protoFiles(r).map((f) => relative(r, f)));
// Field names in lowerCamelCase, as the SDK reads and writes messages.
root.loadSync(files, { keepCase: false });
root.resolveAll();
const out = join(here, "..", "src", "generated", "protos.json");
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify(root.toJSON({ keepComments: false })) + "\n");
