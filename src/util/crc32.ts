/**
 * CRC-32 (the zlib/PNG polynomial, as node:zlib's crc32) of a string's UTF-8 bytes, without
 * loading node:zlib. Every spool line carries one (src/spool/line.ts), so a bridge run checks
 * a hundred of them; loading node:zlib loads most of node:stream with it, ~8 M instructions of
 * a warm run (a sixth of what the run adds to `node -e 0`), while a CRC loop in JavaScript
 * costs more than that cold, in V8's interpreter (docs/performance.md). So the loop is a
 * WebAssembly function of a few dozen bytes, spelled out below, compiled on first use; where
 * WebAssembly is unavailable (`node --jitless`), node:zlib's crc32 answers instead.
 * test/unit/util/crc32.test.ts holds it to node:zlib's over every UTF-8 width and length.
 */

type Crc32 = (text: string) => number;

/** The part of V8's WebAssembly global used here (this project's TypeScript libs do not declare it). */
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: object };
};

const I32 = 0x7f;
/** The lookup table's 256 words sit at byte 0 of the memory; the text is copied after them. */
const TEXT_AT = 1024;

/**
 * The module, byte for byte, as one array literal: built from parts with spreads, helpers and
 * `Uint8Array.from`, it cost ~1.2 M instructions of every bridge run in V8's interpreter
 * (docs/performance.md "Warm bridge (session 9)"). Section and body sizes are written out;
 * test/unit/util/crc32.test.ts holds the result to node:zlib's CRC.
 */
// prettier-ignore
const MODULE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0, // "\0asm", version 1
  1, 11, 2, // type section, 11 bytes, 2 types:
  0x60, 3, I32, I32, I32, 1, I32, // type 0: (i32, i32, i32) → i32
  0x60, 0, 0, // type 1: () → ()
  3, 3, 2, 0, 1, // function section: func 0 ($crc) of type 0, func 1 ($init) of type 1
  5, 3, 1, 0, 1, // memory section: one memory, at least one 64 KiB page
  7, 23, 3, // export section, 23 bytes, 3 exports:
  6, 0x6d, 0x65, 0x6d, 0x6f, 0x72, 0x79, 2, 0, // "memory": memory 0
  3, 0x63, 0x72, 0x63, 0, 0, // "crc": func 0
  4, 0x69, 0x6e, 0x69, 0x74, 0, 1, // "init": func 1
  10, 0x93, 0x01, 2, // code section, 147 bytes (LEB128), 2 bodies:
  // (func $crc (param $p i32) (param $n i32) (param $c i32) (result i32) (local $end i32)): the CRC of n bytes at p, continuing c. 71 bytes:
  71,
  1, 1, I32, // one i32 local: $end
  0x20, 2, 0x41, 0x7f, 0x73, 0x21, 2, // c = c ^ -1
  0x20, 0, 0x20, 1, 0x6a, 0x21, 3, // end = p + n
  0x02, 0x40, 0x03, 0x40, // block, loop
  0x20, 0, 0x20, 3, 0x4f, 0x0d, 1, // br_if (p >= end) out of the block
  // c = table[(c ^ mem[p]) & 0xff] ^ (c >>> 8)
  0x20, 2, 0x20, 0, 0x2d, 0, 0, 0x73, 0x41, 0xff, 0x01, 0x71, 0x41, 2, 0x74, 0x28, 2, 0,
  0x20, 2, 0x41, 8, 0x76, 0x73, 0x21, 2,
  0x20, 0, 0x41, 1, 0x6a, 0x21, 0, // p += 1
  0x0c, 0, 0x0b, 0x0b, // br to the loop; end loop, end block
  0x20, 2, 0x41, 0x7f, 0x73, 0x0b, // c ^ -1; end
  // (func $init (local $n i32) (local $c i32) (local $k i32)): table[n] = n shifted through the reflected polynomial 0xEDB88320, 8 times. 73 bytes:
  73,
  1, 3, I32, // three i32 locals: $n $c $k
  0x03, 0x40, // loop over n
  0x20, 0, 0x21, 1, 0x41, 8, 0x21, 2, // c = n; k = 8
  0x03, 0x40, // loop over k
  // c = (c >>> 1) ^ (0xEDB88320 & -(c & 1))
  0x20, 1, 0x41, 1, 0x76, 0x41, 0, 0x20, 1, 0x41, 1, 0x71, 0x6b, 0x41, 0xa0, 0x86, 0xe2, 0xed, 0x7e, 0x71, 0x73, 0x21, 1,
  0x20, 2, 0x41, 1, 0x6b, 0x22, 2, 0x0d, 0, 0x0b, // br_if (k -= 1) to the k loop; end
  0x20, 0, 0x41, 2, 0x74, 0x20, 1, 0x36, 2, 0, // mem32[n * 4] = c
  0x20, 0, 0x41, 1, 0x6a, 0x22, 0, 0x41, 0x80, 0x02, 0x49, 0x0d, 0, 0x0b, 0x0b, // br_if ((n += 1) < 256) to the n loop; end; end
]);

interface CrcExports {
  memory: { buffer: ArrayBuffer; grow(pages: number): number };
  crc(p: number, n: number, c: number): number;
  init(): void;
}

function wasmCrc32(): Crc32 {
  const exports = new WebAssembly.Instance(new WebAssembly.Module(MODULE)).exports as unknown as CrcExports;
  exports.init();
  let text = Buffer.from(exports.memory.buffer, TEXT_AT);
  return (s) => {
    // A UTF-16 code unit is at most 3 bytes of UTF-8: room for that, so `write` never truncates.
    if (s.length * 3 > text.length) {
      exports.memory.grow(Math.ceil((s.length * 3 - text.length) / 65536));
      text = Buffer.from(exports.memory.buffer, TEXT_AT);
    }
    return exports.crc(TEXT_AT, text.write(s, 'utf8'), 0) >>> 0;
  };
}

let impl: Crc32 | null = null;

export function crc32(text: string): number {
  impl ??= typeof WebAssembly === 'object' ? wasmCrc32() : process.getBuiltinModule('node:zlib').crc32;
  return impl(text);
}
