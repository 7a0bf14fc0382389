import { type Coded, describeValue, done, usageFailure } from '../core/index.js';

export const TRANSPORTS = ['auto', 'sse', 'poll'] as const;
export type Transport = (typeof TRANSPORTS)[number];

export function checkTransport(value: unknown, where: string): Coded<Transport> {
  const found = TRANSPORTS.find((t) => t === value);
  if (found) return done(found);
  return usageFailure('invalid_setting', `${where} must be one of ${TRANSPORTS.join(', ')}, got ${describeValue(value)}`);
}
