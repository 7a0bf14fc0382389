import type { Message } from '../../hub/contract/index.js';

/**
 * `oh-hai doctor --self-test` sends one notify from the agent to its own throwaway session
 * and acknowledges it. MA2H has no way to delete a message, so the Hub keeps it in the
 * agent's sent and received lists; `oh-hai messages list` leaves these out unless asked
 * (--all), because a health check is not mail anyone sent.
 */
export const selfTestText = (nonce: string): string => `oh-hai doctor self-test ${nonce}`;

const SELF_TEST = /^oh-hai doctor self-test [A-Za-z0-9_-]+$/;

/** The message is a self-test's: its text, from this agent to one of this agent's own sessions. */
export function isSelfTestMessage(m: Pick<Message, 'from' | 'to' | 'text'>): boolean {
  const agent = (address: string) => address.split('#')[0];
  return SELF_TEST.test(m.text) && agent(m.from) === agent(m.to) && m.to.includes('#');
}
