// CRC-16/MODBUS: reflected polynomial 0xA001, initial value 0xFFFF, no final XOR.
// Every RTU frame is checked on the hot path, so the per-byte shift loop is
// folded into a 256-entry table once at load time.

const CRC_TABLE = buildTable();

function buildTable(): Uint16Array {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte;
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 1 ? (crc >>> 1) ^ 0xa001 : crc >>> 1;
    }
    table[byte] = crc;
  }
  return table;
}

/**
 * CRC of `buf[start..end)`. The result is a plain number; on the wire it is
 * sent low byte first.
 */
export function crc16(buf: Uint8Array, start = 0, end = buf.length): number {
  let crc = 0xffff;
  for (let i = start; i < end; i++) {
    crc = (crc >>> 8) ^ CRC_TABLE[(crc ^ buf[i]!) & 0xff]!;
  }
  return crc;
}
