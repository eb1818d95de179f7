// A DER encoder for the few ASN.1 types an X.509 certificate needs. Node can
// make key pairs and signatures but not certificates, and a self-signed
// certificate is small enough not to need a library.

/** tag numbers of the universal types used here */
const TAG = {
  boolean: 0x01,
  integer: 0x02,
  bitString: 0x03,
  octetString: 0x04,
  oid: 0x06,
  utf8String: 0x0c,
  sequence: 0x30,
  set: 0x31,
  utcTime: 0x17,
} as const;

/** tlv encodes one tag-length-value; lengths use the short or long form. */
export function tlv(tag: number, content: Buffer): Buffer {
  const n = content.length;
  let len: Buffer;
  if (n < 0x80) {
    len = Buffer.from([n]);
  } else {
    const bytes: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
    len = Buffer.from([0x80 | bytes.length, ...bytes]);
  }
  return Buffer.concat([Buffer.from([tag]), len, content]);
}

export const sequence = (...items: Buffer[]): Buffer => tlv(TAG.sequence, Buffer.concat(items));
export const set = (...items: Buffer[]): Buffer => tlv(TAG.set, Buffer.concat(items));
export const octetString = (b: Buffer): Buffer => tlv(TAG.octetString, b);
export const utf8String = (s: string): Buffer => tlv(TAG.utf8String, Buffer.from(s, "utf8"));
export const boolean = (v: boolean): Buffer => tlv(TAG.boolean, Buffer.from([v ? 0xff : 0x00]));

/** bitString wraps bytes whose last `unusedBits` bits are padding. */
export const bitString = (b: Buffer, unusedBits = 0): Buffer =>
  tlv(TAG.bitString, Buffer.concat([Buffer.from([unusedBits]), b]));

/** explicit wraps content in a context-specific constructed tag [n]. */
export const explicit = (n: number, content: Buffer): Buffer => tlv(0xa0 | n, content);

/** implicitString is a context-specific primitive tag [n] over text. */
export const implicitString = (n: number, s: string): Buffer => tlv(0x80 | n, Buffer.from(s, "ascii"));

/**
 * unsignedInteger encodes big-endian magnitude bytes as a non-negative
 * INTEGER in its minimal form (strict parsers such as Go's refuse others).
 */
export function unsignedInteger(magnitude: Buffer): Buffer {
  let i = 0;
  while (i < magnitude.length - 1 && magnitude[i] === 0) i++;
  let b = magnitude.subarray(i);
  if (b[0] & 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  return tlv(TAG.integer, b);
}

export const smallInteger = (n: number): Buffer => unsignedInteger(Buffer.from([n]));

/** oid encodes a dotted object identifier such as "2.5.29.19". */
export function oid(dotted: string): Buffer {
  const arcs = dotted.split(".").map(Number);
  const out = [40 * arcs[0] + arcs[1]];
  for (const arc of arcs.slice(2)) {
    const chunk: number[] = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift(0x80 | (v & 0x7f));
    out.push(...chunk);
  }
  return tlv(TAG.oid, Buffer.from(out));
}

/** utcTime encodes a date (before 2050) as YYMMDDHHMMSSZ. */
export function utcTime(d: Date): Buffer {
  if (d.getUTCFullYear() >= 2050) throw new Error("UTCTime cannot carry years from 2050");
  const p = (n: number) => String(n).padStart(2, "0");
  const s =
    p(d.getUTCFullYear() % 100) + p(d.getUTCMonth() + 1) + p(d.getUTCDate()) +
    p(d.getUTCHours()) + p(d.getUTCMinutes()) + p(d.getUTCSeconds()) + "Z";
  return tlv(TAG.utcTime, Buffer.from(s, "ascii"));
}
