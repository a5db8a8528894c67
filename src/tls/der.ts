// A minimal DER encoder (ITU-T X.690), just enough to build an X.509
// certificate: Node can sign and parse certificates but has no builder, and
// iogate takes no dependency for one. Each function returns one complete
// tag-length-value; nesting is done by passing encoded children to a
// constructed type.

function tlv(tag: number, content: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from([tag]), lengthOf(content.length), content]);
}

/** Short form below 128, else 0x80|n followed by n big-endian length bytes. */
function lengthOf(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

export function sequence(...children: Uint8Array[]): Buffer {
  return tlv(0x30, Buffer.concat(children));
}

export function set(...children: Uint8Array[]): Buffer {
  return tlv(0x31, Buffer.concat(children));
}

/** A non-negative integer from its big-endian bytes: leading zeros dropped, one 0x00 added when the top bit is set (else it would read as negative). */
export function unsignedInteger(bytes: Uint8Array): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  let content = Buffer.from(bytes.subarray(start));
  if (content.length === 0) content = Buffer.from([0]);
  if ((content[0] ?? 0) & 0x80) content = Buffer.concat([Buffer.from([0]), content]);
  return tlv(0x02, content);
}

export function smallInteger(value: number): Buffer {
  const bytes: number[] = [];
  for (let rest = value; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest & 0xff);
  return unsignedInteger(Uint8Array.from(bytes));
}

export function boolean(value: boolean): Buffer {
  return tlv(0x01, Buffer.from([value ? 0xff : 0x00]));
}

/** Dotted object identifier, e.g. "2.5.4.3". */
export function objectIdentifier(dotted: string): Buffer {
  const arcs = dotted.split('.').map(Number);
  const [first = 0, second = 0, ...rest] = arcs;
  const bytes: number[] = [];
  for (const arc of [first * 40 + second, ...rest]) {
    const base128: number[] = [arc & 0x7f];
    for (let high = Math.floor(arc / 128); high > 0; high = Math.floor(high / 128)) base128.unshift(0x80 | (high & 0x7f));
    bytes.push(...base128);
  }
  return tlv(0x06, Buffer.from(bytes));
}

export function utf8String(text: string): Buffer {
  return tlv(0x0c, Buffer.from(text, 'utf8'));
}

export function octetString(content: Uint8Array): Buffer {
  return tlv(0x04, content);
}

/** A BIT STRING of whole bytes, or with `unusedBits` trailing bits unused (for keyUsage). */
export function bitString(content: Uint8Array, unusedBits = 0): Buffer {
  return tlv(0x03, Buffer.concat([Buffer.from([unusedBits]), content]));
}

/**
 * UTCTime for years 1950-2049, GeneralizedTime from 2050 on, as RFC 5280 4.1.2.5
 * requires; always in whole seconds and UTC ("Z").
 */
export function time(date: Date): Buffer {
  const iso = date.toISOString(); // 2026-11-29T04:28:06.000Z
  const digits = iso.slice(0, 19).replace(/[-T:]/g, '') + 'Z'; // 20261129042806Z
  const year = date.getUTCFullYear();
  if (year >= 1950 && year < 2050) return tlv(0x17, Buffer.from(digits.slice(2), 'ascii'));
  return tlv(0x18, Buffer.from(digits, 'ascii'));
}

/** `[n]` EXPLICIT: wraps an encoded value. */
export function explicit(tagNumber: number, content: Uint8Array): Buffer {
  return tlv(0xa0 | tagNumber, content);
}

/** `[n]` IMPLICIT of a primitive type: the raw content under a context tag (subjectAltName's dNSName, iPAddress). */
export function implicitPrimitive(tagNumber: number, content: Uint8Array): Buffer {
  return tlv(0x80 | tagNumber, content);
}
