import assert from "node:assert/strict";
import { test } from "node:test";
import * as der from "../der";

const hex = (b: Buffer) => b.toString("hex");

test("integers are minimal and never negative", () => {
  assert.equal(hex(der.smallInteger(2)), "020102");
  assert.equal(hex(der.unsignedInteger(Buffer.from([0x00, 0x00, 0x7f]))), "02017f");
  // A set top bit needs a leading zero, or the value would read negative.
  assert.equal(hex(der.unsignedInteger(Buffer.from([0x80]))), "02020080");
  assert.equal(hex(der.unsignedInteger(Buffer.from([0x00]))), "020100");
});

test("lengths use the short form below 128 and the long form above", () => {
  assert.equal(hex(der.octetString(Buffer.alloc(127))).slice(0, 4), "047f");
  assert.equal(hex(der.octetString(Buffer.alloc(128))).slice(0, 6), "048180");
  assert.equal(hex(der.octetString(Buffer.alloc(300))).slice(0, 8), "0482012c");
});

test("object identifiers encode their arcs in base 128", () => {
  // ecdsa-with-SHA256 and subjectAltName, as every certificate spells them.
  assert.equal(hex(der.oid("1.2.840.10045.4.3.2")), "06082a8648ce3d040302");
  assert.equal(hex(der.oid("2.5.29.17")), "0603551d11");
});

test("UTCTime is YYMMDDHHMMSSZ and refuses 2050 and later", () => {
  assert.equal(der.utcTime(new Date(Date.UTC(2026, 10, 26, 1, 2, 3))).subarray(2).toString(), "261126010203Z");
  assert.throws(() => der.utcTime(new Date(Date.UTC(2050, 0, 1))));
});
