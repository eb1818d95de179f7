import assert from "node:assert/strict";
import { X509Certificate, createPrivateKey } from "node:crypto";
import { test } from "node:test";
import { generateCertificate } from "../mtls";

test("the certificate is what go-plugin's host trusts", () => {
  const own = generateCertificate(new Date(Date.UTC(2026, 0, 1)));
  const cert = new X509Certificate(own.certDer);
  assert.equal(cert.subject, "CN=localhost");
  assert.equal(cert.subjectAltName, "DNS:localhost");
  assert.equal(cert.ca, true, "its own trust anchor");
  assert.deepEqual(cert.keyUsage, ["1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2"], "server and client auth");
  assert.ok(cert.checkPrivateKey(createPrivateKey(own.keyPem)), "the key matches");
  assert.ok(cert.verify(cert.publicKey), "self-signed");
  assert.equal(new Date(cert.validFrom).toISOString(), "2025-12-31T23:59:30.000Z", "30 s of clock skew");
  assert.equal(new Date(cert.validTo).getUTCFullYear(), 2036);
  assert.equal(new X509Certificate(own.certPem).fingerprint256, cert.fingerprint256, "PEM and DER agree");
});

test("every launch gets a key and serial of its own", () => {
  const a = new X509Certificate(generateCertificate().certDer);
  const b = new X509Certificate(generateCertificate().certDer);
  assert.notEqual(a.serialNumber, b.serialNumber);
  assert.notEqual(a.fingerprint256, b.fingerprint256);
});
