import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { verifyMac, type Entry } from '../../../src/hub/contract/index.js';
import { defaultHubConfig } from '../../../src/hub/server/config.js';
import { Signer } from '../../../src/hub/server/delivery.js';
import type { EntryRow } from '../../../src/hub/server/entries.js';
import { FaultTable } from '../../../src/hub/server/faults.js';
import { fakeClock } from '../../../src/util/clock.js';
import { repoRoot } from '../../helpers/cli.js';

// Issue 19 (CPU per send): the Hub stores each entry as its canonical JSON, so a delivery signs
// the stored text as it is — one serialisation per delivery (the signature's string), no parse,
// no canonical re-serialising. Counted, never timed: JSON.parse and JSON.stringify calls per
// delivery. Rows an earlier build wrote (canonical NULL, fields in build order) still verify.

const vectors = JSON.parse(readFileSync(path.join(repoRoot, 'test', 'vectors', 'signatures.json'), 'utf8')) as {
  key: string;
  cases: { entry: Entry; canonical: string }[];
};

const signer = (faults = new FaultTable()) =>
  new Signer({ config: defaultHubConfig({ dataDir: '/nonexistent', signingKey: vectors.key, version: 'test' }), clock: fakeClock(1_758_205_087_000), faults });

const row = (body: string, canonical: number | null, entry: Entry): EntryRow => ({
  seq: 1,
  id: entry.id,
  kind: entry.kind,
  body,
  to_agent: 'agt_x',
  to_session: null,
  claimed_session: null,
  message_id: null,
  created_at: 0,
  delivered: 0,
  state: 'pending',
  canonical,
});

/** What one call of `fn` costs in JSON.parse and JSON.stringify calls. */
function jsonCalls<T>(fn: () => T): { value: T; parses: number; stringifies: number } {
  const parse = vi.spyOn(JSON, 'parse');
  const stringify = vi.spyOn(JSON, 'stringify');
  try {
    const value = fn();
    return { value, parses: parse.mock.calls.length, stringifies: stringify.mock.calls.length };
  } finally {
    parse.mockRestore();
    stringify.mockRestore();
  }
}

describe('a delivery is signed over the stored canonical body', () => {
  afterEach(() => vi.restoreAllMocks());

  it.each(vectors.cases.map((c, i) => [i, c] as const))('vector %i: stored canonical → no parse, one stringify, the entry verbatim, a valid MAC', (_i, c) => {
    const { value, parses, stringifies } = jsonCalls(() => signer().deliveryJson(row(c.canonical, 1, c.entry), 'stream'));
    expect(parses).toBe(0);
    expect(stringifies).toBe(1);
    expect(value.startsWith(`{"entry":${c.canonical},"signature":`)).toBe(true);
    const delivery = JSON.parse(value) as { entry: Entry; signature: string };
    expect(delivery.entry).toEqual(c.entry);
    expect(verifyMac(vectors.key, delivery.signature, c.entry)).toBe(true);
  });

  it.each(vectors.cases.map((c, i) => [i, c] as const))('vector %i: a row of an earlier build (not canonical) is signed over its canonical form', (_i, c) => {
    // Fields in the order they were built: what JSON.stringify(entry) stored before.
    const legacy = JSON.stringify(c.entry);
    const { value, parses } = jsonCalls(() => signer().deliveryJson(row(legacy, null, c.entry), 'stream'));
    expect(parses).toBe(1);
    const delivery = JSON.parse(value) as { entry: Entry; signature: string };
    expect(delivery.entry).toEqual(c.entry);
    expect(verifyMac(vectors.key, delivery.signature, c.entry)).toBe(true);
  });

  it('a drain delivery of a canonical row parses the entry once (its object form) and signs the stored text', () => {
    const c = vectors.cases[1]!;
    const { value, parses } = jsonCalls(() => signer().deliver(row(c.canonical, 1, c.entry), 'drain'));
    expect(parses).toBe(1);
    expect(value.entry).toEqual(c.entry);
    expect(verifyMac(vectors.key, value.signature, c.entry)).toBe(true);
  });

  it('a tamper fault signs what it changed: the MAC covers the tampered entry, not the stored one', () => {
    const c = vectors.cases[1]!;
    const faults = new FaultTable();
    faults.set([{ class: 'stream', action: 'tamper', tamper: 'unknown_field', count: 1 }]);
    const delivery = JSON.parse(signer(faults).deliveryJson(row(c.canonical, 1, c.entry), 'stream')) as { entry: Entry; signature: string };
    expect(delivery.entry).toEqual({ ...c.entry, x_extra: 'tampered' });
    expect(verifyMac(vectors.key, delivery.signature, delivery.entry)).toBe(true);
    expect(verifyMac(vectors.key, delivery.signature, c.entry)).toBe(false);
  });
});
