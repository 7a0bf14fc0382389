import { afterEach, describe, expect, it } from 'vitest';
import { acknowledged, bridge, cli, enc, messageWith, pair, shownId, teardown } from './world.js';

/**
 * send/ask/reply against the peer Hub (MA2H §8, §12), with this agent session attached.
 * Message ids are the peer Hub's own shape (no `msg_` prefix); one case uses ids that need
 * percent-encoding in a path.
 */

afterEach(teardown);

describe('send, ask and reply against the peer Hub', () => {
  for (const ids of ['peer', 'exotic'] as const) {
    it(`a notify and an ask reach the other run, the reply reaches the asking run (${ids} ids)`, async () => {
      const { hub, a, b, aAddr, bAddr } = await pair({ ids });
      const sent = await cli(a, 'A', ['send', '--to', bAddr, 'the build is green']);
      expect(sent.code, sent.stderr).toBe(0);
      const notify = messageWith(hub, 'the build is green');
      expect(sent.stdout).toContain(`queued: notify ${shownId(notify.id)} to ${shownId(bAddr)}`);
      expect(sent.stdout).toMatch(/destination: online\b/);
      // This agent session was attached automatically (§8 `session`): the sender is the run's address.
      expect(notify.from).toBe(aAddr);

      const asked = await cli(a, 'A', ['ask', '--to', bAddr, 'which branch?']);
      expect(asked.code, asked.stderr).toBe(0);
      const ask = messageWith(hub, 'which branch?');
      expect(ask.from).toBe(aAddr);

      const atB = await bridge(b, 'B', ['--wait', '10']);
      expect(atB.code, atB.stderr).toBe(0);
      expect(atB.stdout).toContain(`notify from ${shownId(aAddr)} (${shownId(notify.id)}) · notify: no reply expected`);
      expect(atB.stdout).toContain(`ask from ${shownId(aAddr)} (${shownId(ask.id)}) · reply: oh-hai reply ${shownId(ask.id)}`);
      await acknowledged(hub, ask);

      const replied = await cli(b, 'B', ['reply', ask.id, 'main']);
      expect(replied.code, replied.stderr).toBe(0);
      const response = hub.store.messages.get(ask.response!.messageId)!;
      expect([response.intent, response.to, response.from, response.text]).toEqual(['response', aAddr, bAddr, 'main']);
      // The id went into the path percent-encoded, and arrived whole.
      expect(hub.requests.some((q) => q.route === 'messages.respond' && q.target === `/v1/messages/${enc(ask.id)}/respond`)).toBe(true);

      const atA = await bridge(a, 'A', ['--wait', '10']);
      expect(atA.code, atA.stderr).toBe(0);
      expect(atA.stdout).toContain(`response from ${shownId(bAddr)} to your ask ${shownId(ask.id)} (${shownId(response.id)})`);
      expect(atA.stdout).toContain('"main"');
      expect(atA.stdout).toContain(`receipt: your message ${shownId(ask.id)} to ${shownId(bAddr)} acknowledged`);
    });
  }
});
