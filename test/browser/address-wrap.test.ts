import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hubCall, startHub, type TestHub } from '../helpers/hub.js';
import { chromiumMissing, launchChromium, type Browser } from './chromium.js';

if (chromiumMissing) console.warn(`web inbox address-wrapping browser test SKIPPED: ${chromiumMissing}`);

/** A phone's width: every table on these pages is wider than this, so the layout must decide where text may break. */
const NARROW = { width: 360, height: 800 };

/**
 * Issue 17: "The web inbox shows agent:agt_… broken mid-token". An address or an id is one
 * token a person copies and compares; it may move to a line of its own, and the page may
 * scroll sideways, but the token itself is never split over two lines. Checked on the laid
 * out page in Chromium: an inline element split over lines has one client rect per line.
 */
describe.skipIf(chromiumMissing !== null)('web inbox: addresses never break mid-token', () => {
  let hub: TestHub;
  let browser: Browser;
  let agent = { id: '', token: '' };
  let session = '';

  /** Every `<code>` of the page whose text matches `token`, with the number of lines each is laid out on. */
  const codeLines = (token: RegExp): Promise<{ text: string; lines: number }[]> =>
    // Evaluated in the page (a string, so no DOM types here): one client rect top per laid-out line.
    browser.page.evaluate(`[...document.querySelectorAll('code')]
      .filter((el) => new RegExp(${JSON.stringify(token.source)}).test(el.textContent ?? ''))
      .map((el) => ({ text: el.textContent ?? '', lines: new Set([...el.getClientRects()].map((r) => Math.round(r.top))).size }))`);

  const expectWhole = async (path: string, token: RegExp, atLeast: number) => {
    await browser.page.goto(hub.url + path);
    const found = await codeLines(token);
    expect(found.length, `${path}: <code> elements matching ${token}`).toBeGreaterThanOrEqual(atLeast);
    for (const c of found) expect(c.lines, `${path}: ${c.text} is laid out on ${c.lines} lines`).toBe(1);
    // The page may scroll sideways rather than break a token, but the header and the lead text still fit.
    await browser.shot(`address-wrap${path.replace(/\//g, '-')}`);
    return found;
  };

  beforeAll(async () => {
    hub = await startHub();
    agent = await hub.mintAgent('a-label-long-enough-to-widen-its-column');
    const s = await hubCall(hub, 'POST', '/v1/sessions', { token: agent.token, body: { client_key: 'wrap-test', name: 'wrap' } });
    expect(s.status, JSON.stringify(s.body)).toBeLessThan(300);
    session = (s.body.session as { id: string }).id;
    const d = await hubCall(hub, 'POST', '/v1/directives', {
      token: hub.humanToken,
      body: { to: `agent:${agent.id}`, text: 'a directive whose text is long enough to make its column want the whole width of a narrow screen' },
    });
    expect(d.status).toBe(202);
    browser = await launchChromium();
    await browser.page.setViewportSize(NARROW);
    await browser.page.goto(`${hub.url}/login`);
    await browser.page.getByLabel('Human token').fill(hub.humanToken);
    await browser.page.getByRole('button', { name: 'Sign in' }).click();
    await browser.page.waitForURL(`${hub.url}/fleet`);
  });

  afterAll(async () => {
    await browser?.close();
    await hub?.dispose();
  });

  it('the inbox: the recipient address and the message id each stay on one line', async () => {
    await expectWhole('/inbox', new RegExp(`^agent:${agent.id}$`), 1);
    await expectWhole('/inbox', /^msg_/, 1);
  });

  it("the fleet: a session's address (agent:…#sess_…) stays on one line", async () => {
    const found = await expectWhole('/fleet', new RegExp(`^agent:${agent.id}#${session}$`), 1);
    expect(found[0]!.text).toContain('#sess_');
  });

  it('the agents page: the agent id stays on one line', async () => {
    await expectWhole('/agents', new RegExp(`^${agent.id}$`), 1);
  });

  it('the check can see a break: with the old rule (code { overflow-wrap: anywhere }) the same address splits', async () => {
    // Without this, a viewport too wide to ever need a break would pass the checks above vacuously.
    // The page's CSP refuses an injected <style>; the CSSOM of each element is still ours to set.
    await browser.page.goto(`${hub.url}/inbox`);
    await browser.page.evaluate(`document.querySelectorAll('code').forEach((el) => el.style.setProperty('overflow-wrap', 'anywhere'))`);
    const found = await codeLines(new RegExp(`^agent:${agent.id}$`));
    expect(found).toHaveLength(1);
    expect(found[0]!.lines).toBeGreaterThan(1);
  });
});
