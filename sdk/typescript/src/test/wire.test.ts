import assert from "node:assert/strict";
import { test } from "node:test";
import { requestFromWire, resultToWire } from "../convert";
import { PluginError, fromServiceError, toServiceError } from "../errors";
import { root } from "../protos";
import { cancelled, completed, failed, paused } from "../types";

test("a result carries its status as the string and as the typed enum", () => {
  const RunResult = root.lookupType("agenthost.engine.v1.RunResult");
  const cases: [ReturnType<typeof completed>, number][] = [
    [completed("done"), 1],
    [failed("X", "y"), 2],
    [cancelled(), 3],
    [paused("token_budget"), 4],
  ];
  for (const [result, number] of cases) {
    const wire = RunResult.decode(RunResult.encode(RunResult.fromObject(resultToWire(result))).finish());
    const plain = RunResult.toObject(wire) as { status: string; statusEnum: number };
    assert.equal(plain.status, result.status);
    assert.equal(plain.statusEnum, number, `status_enum of ${result.status}`);
  }
});

test("history roles prefer the enum and fall back to the string", () => {
  const req = requestFromWire({
    runId: "r",
    history: [
      { role: "user", roleEnum: "ROLE_ASSISTANT", content: "enum wins" },
      { role: "system", roleEnum: "ROLE_UNSPECIFIED", content: "an older peer" },
      { role: "user", roleEnum: 42, content: "an enum this SDK does not know" },
    ],
  });
  assert.deepEqual(req.history.map((m) => m.role), ["assistant", "system", "user"]);
});

test("error codes cross in status details, and only agenthost's", () => {
  const se = toServiceError(new PluginError("WORKSPACE_PATH_DENIED", "outside the root", "path"));
  assert.equal(se.code, 7, "PERMISSION_DENIED for a path refusal");
  const back = fromServiceError(se);
  assert.ok(back instanceof PluginError);
  assert.equal(back.code, "WORKSPACE_PATH_DENIED");
  assert.equal(back.message, "outside the root");
  assert.equal(back.field, "path");

  // A status whose ErrorInfo has another domain is a plain gRPC error.
  const Status = root.lookupType("google.rpc.Status");
  const ErrorInfo = root.lookupType("google.rpc.ErrorInfo");
  const info = ErrorInfo.encode(ErrorInfo.fromObject({ reason: "NOT_FOUND", domain: "elsewhere" })).finish();
  const raw = Buffer.from(Status.encode(Status.fromObject({ code: 5, message: "m", details: [{ type_url: "type.googleapis.com/google.rpc.ErrorInfo", value: info }] })).finish());
  const foreign = { code: 5, details: "m", metadata: { get: () => [raw] } };
  assert.equal(fromServiceError(foreign) instanceof PluginError, false);

  const plain = toServiceError(new Error("boom"));
  assert.equal(plain.code, 13, "anything else is INTERNAL");
  assert.equal(plain.details, "boom");
});
