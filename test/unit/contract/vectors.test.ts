import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../helpers/cli.js';
import {
  canonicalJson,
  checkCapability,
  chooseTransport,
  macHex,
  parseSignature,
  replayWindowSeconds,
  signCanonical,
  signEntry,
  validateEntry,
  verifyMac,
} from '../../../src/hub/contract/index.js';

// The shared vectors are read at test time, never copied, so a vector change reaches us.
const vectors = <T>(name: string): T => JSON.parse(readFileSync(path.join(repoRoot, 'test', 'vectors', name), 'utf8')) as T;

interface Case {
  why?: string;
}
const label = (c: Case, i: number) => `#${i}${c.why ? ` (${c.why})` : ''}`;

describe('capability vectors', () => {
  const { cases } = vectors<{ cases: (Case & { capability: unknown; accept: boolean; transport?: 'sse' | 'poll' })[] }>('capability.json');
  it.each(cases.map((c, i) => [label(c, i), c] as const))('%s', (_name, c) => {
    const r = checkCapability(c.capability);
    expect(r.ok, r.ok ? '' : r.reason).toBe(c.accept);
    if (!r.ok) {
      expect(r.reason.length).toBeGreaterThan(20);
      return;
    }
    expect(chooseTransport(r.value, 'auto')).toBe(c.transport);
    const advertised = (c.capability as { replay_window_seconds?: number }).replay_window_seconds;
    expect(replayWindowSeconds(r.value)).toBe(advertised ?? 300);
  });
});

describe('entry vectors', () => {
  const { cases } = vectors<{ cases: (Case & { entry: unknown; valid: boolean })[] }>('entries.json');
  it.each(cases.map((c, i) => [label(c, i), c] as const))('%s', (_name, c) => {
    const r = validateEntry(c.entry);
    expect(r.ok, r.ok ? '' : r.reason).toBe(c.valid);
    // A valid entry comes back field for field: the validator drops and invents nothing.
    if (r.ok) expect(r.value).toEqual(c.entry);
  });
});

describe('signature syntax vectors', () => {
  const { cases } = vectors<{ cases: (Case & { value: string; valid: boolean })[] }>('signature-syntax.json');
  it.each(cases.map((c, i) => [label(c, i), c] as const))('%s', (_name, c) => {
    const r = parseSignature(c.value, ['hmac-sha256']);
    expect(r.ok, r.ok ? '' : r.reason).toBe(c.valid);
  });
});

describe('signature vectors', () => {
  const v = vectors<{
    key: string;
    cases: { entry: unknown; t: number; jti: string; canonical: string; signature: string }[];
    canonical_only: { value: unknown; canonical: string }[];
  }>('signatures.json');
  it.each(v.cases.map((c, i) => [i, c] as const))('case %i: canonical form, MAC and full value', (_i, c) => {
    expect(canonicalJson(c.entry)).toBe(c.canonical);
    expect(signEntry(v.key, c.entry, c.t, c.jti)).toBe(c.signature);
    // The Hub signs a stored canonical body as it is: the same value from the text alone.
    expect(signCanonical(v.key, c.canonical, c.t, c.jti)).toBe(c.signature);
    expect(c.signature.endsWith(`v1=${macHex(v.key, c.t, c.jti, c.entry)}`)).toBe(true);
    expect(verifyMac(v.key, c.signature, c.entry)).toBe(true);
    expect(validateEntry(c.entry).ok).toBe(true);
  });
  it.each(v.cases.map((c, i) => [i, c] as const))('case %i: a changed entry, key or jti does not verify', (_i, c) => {
    const tampered = { ...(c.entry as Record<string, unknown>), to: 'agent:agt_other' };
    expect(verifyMac(v.key, c.signature, tampered)).toBe(false);
    expect(verifyMac(`${v.key}x`, c.signature, c.entry)).toBe(false);
    expect(verifyMac(v.key, c.signature.replace(c.jti, 'jti_ZZZZZZZZZZZZZZZZZZ'), c.entry)).toBe(false);
  });
  it.each(v.canonical_only.map((c, i) => [i, c] as const))('canonical only %i', (_i, c) => {
    expect(canonicalJson(c.value)).toBe(c.canonical);
  });
});
