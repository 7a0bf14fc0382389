import { randomBytes } from 'node:crypto';
import type { IdStyle } from './knobs.js';

/**
 * Id minting. MA2H §0: ids are opaque, at most 128 bytes (agent ids 512), with no `#`,
 * whitespace or control characters. We use none of the reference Hub's prefixes except
 * where a test asks for one, so a client that keys on `agt_`/`ent_`/`msg_` is caught.
 */

const ALNUM = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';

function alnum(n: number): string {
  const bytes = randomBytes(n);
  let out = '';
  for (const b of bytes) out += ALNUM[b % ALNUM.length];
  return out;
}

type IdKind = 'account' | 'agent' | 'session' | 'entry' | 'message' | 'cursor';

/** Shapes per style. `exotic` ids need percent-encoding in a URL path or query. */
const SHAPES: Record<IdStyle, Record<IdKind, (n: number) => string>> = {
  peer: {
    account: (n) => `Org.${n}-${alnum(5)}`,
    agent: (n) => `pa.${n}-${alnum(6)}:x`,
    session: (n) => `${n}.${alnum(10)}~L`,
    entry: (n) => `e${n}~${alnum(12)}`,
    message: (n) => `M:${n}.${alnum(9)}`,
    cursor: (n) => `c${n}_${alnum(4)}`,
  },
  exotic: {
    account: (n) => `Org/${n}?é`,
    agent: (n) => `pa/${n}%é&q${alnum(3)}`,
    session: (n) => `${n}/é?s&${alnum(6)}%`,
    entry: (n) => `e/${n}?${alnum(8)}%ü`,
    message: (n) => `M/${n}?x=${alnum(5)}&%25ñ`,
    cursor: (n) => `c/${n}?é`,
  },
};

export class IdMint {
  private n = 0;
  constructor(private readonly style: () => IdStyle) {}

  next(kind: IdKind, prefix = ''): string {
    this.n += 1;
    return prefix + SHAPES[this.style()][kind](this.n);
  }
}

/** A `jti` of a length that varies per delivery (§7: [A-Za-z0-9_-]{16,128}). */
export function freshJti(): string {
  const len = 16 + (randomBytes(1)[0]! % 97);
  return randomBytes(len).toString('base64url').slice(0, len);
}

export const freshToken = (): string => `peer.${randomBytes(24).toString('base64url')}`;
