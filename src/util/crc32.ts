/**
 * CRC-32 (IEEE 802.3, the one zlib computes) of a UTF-8 string. The same value node:zlib's
 * crc32 gives (test/unit/util/digests.test.ts checks it), written out because loading
 * node:zlib costs every run that reads the spool ~1 ms, and the reader's warm path needs
 * nothing else from it (docs/performance.md).
 */
let table: Int32Array | undefined;

function makeTable(): Int32Array {
  const t = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c;
  }
  return t;
}

export function crc32(text: string): number {
  table ??= makeTable();
  const bytes = Buffer.from(text, 'utf8');
  let c = -1;
  for (let i = 0; i < bytes.length; i++) c = table[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}
