// AutoMTLS, the plugin's side: a throwaway ECDSA P-256 key and a self-signed
// certificate for "localhost", usable for server and client auth, as
// go-plugin's host expects. The host trusts exactly this certificate (it
// comes back to it in the handshake line), and the plugin trusts exactly the
// host's (PLUGIN_CLIENT_CERT).
import { X509Certificate, generateKeyPairSync, randomBytes, sign } from "node:crypto";
import * as der from "./der";

/** PluginCertificate is the plugin's key pair and certificate. */
export interface PluginCertificate {
  /** certificate in PEM, for the TLS server and the broker's client */
  certPem: Buffer;
  /** private key in PEM (PKCS#8) */
  keyPem: Buffer;
  /** certificate in DER, for the handshake line */
  certDer: Buffer;
}

const OID = {
  ecdsaWithSHA256: "1.2.840.10045.4.3.2",
  commonName: "2.5.4.3",
  basicConstraints: "2.5.29.19",
  keyUsage: "2.5.29.15",
  extKeyUsage: "2.5.29.37",
  subjectAltName: "2.5.29.17",
  serverAuth: "1.3.6.1.5.5.7.3.1",
  clientAuth: "1.3.6.1.5.5.7.3.2",
};

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical
    ? der.sequence(der.oid(id), der.boolean(true), der.octetString(value))
    : der.sequence(der.oid(id), der.octetString(value));
}

/** generateCertificate makes a fresh key and certificate, valid from 30 s ago for ten years. */
export function generateCertificate(now = new Date()): PluginCertificate {
  const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const spki = publicKey.export({ type: "spki", format: "der" });
  const name = der.sequence(der.set(der.sequence(der.oid(OID.commonName), der.utf8String("localhost"))));
  const algorithm = der.sequence(der.oid(OID.ecdsaWithSHA256));
  // A positive serial with its top bit clear and next bit set: minimal and
  // never negative, as strict parsers require.
  const serial = randomBytes(16);
  serial[0] = (serial[0] & 0x3f) | 0x40;
  const notAfter = new Date(now.getTime());
  notAfter.setUTCFullYear(notAfter.getUTCFullYear() + 10);
  // keyUsage: digitalSignature (bit 0) and keyCertSign (bit 5); the last
  // two bits of the byte are unused.
  const keyUsage = der.bitString(Buffer.from([0x84]), 2);
  const tbs = der.sequence(
    der.explicit(0, der.smallInteger(2)), // v3
    der.unsignedInteger(serial),
    algorithm,
    name,
    der.sequence(der.utcTime(new Date(now.getTime() - 30_000)), der.utcTime(notAfter)),
    name,
    spki,
    der.explicit(
      3,
      der.sequence(
        // A CA: its own trust anchor, the way go-plugin's host sees it.
        extension(OID.basicConstraints, true, der.sequence(der.boolean(true))),
        extension(OID.keyUsage, true, keyUsage),
        extension(OID.extKeyUsage, false, der.sequence(der.oid(OID.serverAuth), der.oid(OID.clientAuth))),
        extension(OID.subjectAltName, false, der.sequence(der.implicitString(2, "localhost"))),
      ),
    ),
  );
  const signature = sign("sha256", tbs, privateKey);
  const certDer = der.sequence(tbs, algorithm, der.bitString(signature));
  // Parsing it back checks the encoding and gives the PEM form.
  const cert = new X509Certificate(certDer);
  if (!cert.verify(publicKey)) throw new Error("the generated certificate does not verify with its own key");
  return {
    certDer,
    certPem: Buffer.from(cert.toString()),
    keyPem: Buffer.from(privateKey.export({ type: "pkcs8", format: "pem" })),
  };
}
