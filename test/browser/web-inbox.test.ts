import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect, startOhHai, type RunResult } from '../helpers/cli.js';
import { tempEnv, type TempEnv } from '../helpers/env.js';
import { startHub, type TestHub } from '../helpers/hub.js';
import { waitFor } from '../helpers/wait.js';
import { chromiumMissing, launchChromium, SCREENSHOT_DIR, type Browser } from './chromium.js';

if (chromiumMissing) console.warn(`web inbox browser tests SKIPPED: ${chromiumMissing}`);

const SESSION_NAME = 'web-builder';
const HOSTILE_LABEL = 'builder <b>bold</b>';
const DIRECTIVE = 'Run the unit tests <script>document.title="pwned"</script> and reply "done" when they pass.';

interface FleetRowJson {
  address: string;
  session_id: string;
  name: string | null;
}

/**
 * The human's side end to end: a real `oh-hai hub serve`, real `oh-hai bridge` processes,
 * and Debian's Chromium clicking through the web inbox. Each step builds on the one before.
 */
describe.skipIf(chromiumMissing !== null)('web inbox in a real browser', () => {
  let hub: TestHub;
  let browser: Browser;
  let agentEnv: TempEnv;
  let agent = { id: '', token: '' };
  let sessionId = '';
  const bridges: ChildProcess[] = [];

  const api = async (method: string, path: string, token: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> => {
    const res = await fetch(hub.url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };

  const liveSessions = async (): Promise<FleetRowJson[]> => (await api('GET', '/v1/fleet', hub.humanToken)).json.sessions as FleetRowJson[];

  /** Start `oh-hai bridge` for the minted agent under a fixed session name; resolves with its result when it exits. */
  const bridge = (waitSeconds: number): { stderr: () => string; done: Promise<RunResult> } => {
    const proc = startOhHai(['bridge', '--wait', String(waitSeconds)], { env: agentEnv.env });
    proc.stdin?.end();
    bridges.push(proc);
    let stderr = '';
    proc.stderr?.on('data', (d: Buffer | string) => (stderr += String(d)));
    return { stderr: () => stderr, done: collect(proc, 90_000) };
  };

  const goto = async (path: string): Promise<void> => {
    await browser.page.goto(hub.url + path);
  };

  const heading = async (): Promise<string> => (await browser.page.locator('h1').textContent()) ?? '';

  /** Every visible form control on the page has a label (evaluated in the page, so no DOM types here). */
  const everyControlLabelled = async (): Promise<void> => {
    const controls = await browser.page.evaluate<{ total: number; unlabelled: string[] }>(`(() => {
      const all = [...document.querySelectorAll('input:not([type=hidden]), textarea, select')];
      const unlabelled = all.filter((el) => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')).map((el) => el.outerHTML);
      return { total: all.length, unlabelled };
    })()`);
    expect(controls.total).toBeGreaterThan(0);
    expect(controls.unlabelled, browser.page.url()).toEqual([]);
  };

  beforeAll(async () => {
    hub = await startHub();
    browser = await launchChromium();
  });

  afterAll(async () => {
    for (const b of bridges) if (b.exitCode === null && b.signalCode === null) b.kill('SIGKILL');
    await browser?.close();
    await hub?.dispose();
    agentEnv?.cleanup();
  });

  it('signs in with the human token into an HttpOnly SameSite=Strict session; a wrong token is refused', async () => {
    const { page } = browser;
    await goto('/');
    expect(new URL(page.url()).pathname).toBe('/login');
    expect(await heading()).toBe('Sign in');
    await everyControlLabelled();
    await browser.shot('login');

    await page.getByLabel('Human token').fill('not-a-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('does not accept that token');

    // Keyboard only: the first Tab reaches the skip link, Enter in the field submits the form.
    await page.keyboard.press('Tab');
    expect(await page.locator(':focus').textContent()).toBe('Skip to content');
    await page.getByLabel('Human token').fill(hub.humanToken);
    await page.getByLabel('Human token').press('Enter');
    await page.waitForURL(`${hub.url}/fleet`);
    expect(await heading()).toBe('Fleet');
    expect(page.url()).not.toContain(hub.humanToken);

    const cookies = await browser.context.cookies(hub.url);
    expect(cookies).toHaveLength(1);
    const c = cookies[0]!;
    expect(c).toMatchObject({ name: 'oh_hai_web', httpOnly: true, sameSite: 'Strict', secure: false, path: '/' });
    expect(c.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(c.value).not.toContain(hub.humanToken);
    expect(hub.output().stdout + hub.output().stderr).not.toContain(hub.humanToken);
  });

  it('mints an agent from the Agents page and shows its token once; its label is shown as text', async () => {
    const { page } = browser;
    await goto('/agents');
    await everyControlLabelled();
    await page.getByLabel('Label').fill(HOSTILE_LABEL);
    await page.getByRole('button', { name: 'Mint agent' }).click();
    await page.waitForURL(`${hub.url}/agents`);
    const token = ((await page.locator('#once-secret').textContent()) ?? '').trim();
    expect(token.length).toBeGreaterThan(20);
    const row = page.getByRole('row').filter({ hasText: HOSTILE_LABEL });
    await expect.poll(() => row.count()).toBe(1);
    expect(await page.locator('main b').count()).toBe(0);
    const id = ((await row.locator('code').first().textContent()) ?? '').trim();
    expect(id).toMatch(/^agt_/);
    agent = { id, token };
    await browser.shot('agents');

    const who = await api('GET', '/v1/whoami', token);
    expect(who.json).toMatchObject({ kind: 'agent', agent: { id } });

    await page.reload();
    expect(await page.locator('#once-secret').count()).toBe(0);
    expect(await page.content()).not.toContain(token);

    agentEnv = tempEnv({
      MA2H_HUB_URL: hub.url,
      MA2H_AGENT_TOKENS: `${agent.id}=${agent.token}`,
      MA2H_AGENT_SESSION_ID: SESSION_NAME,
      OH_HAI_HEARTBEAT_MS: '200',
    });
  });

  it('sends a directive from the Send page that a running bridge prints; the <script> in it is shown as text', async () => {
    const first = bridge(60);
    const row = await waitFor(async () => (await liveSessions()).find((r) => r.name === SESSION_NAME), { what: 'the bridge session in the fleet' });
    sessionId = row.session_id;

    const { page } = browser;
    await goto('/send');
    expect(await page.getByRole('complementary').textContent()).toContain('Expect queued, not read.');
    await page.getByLabel('To', { exact: true }).fill(row.address);
    await page.getByLabel('Directive', { exact: true }).fill(DIRECTIVE);
    await everyControlLabelled();
    await browser.shot('send');
    await page.getByRole('button', { name: 'Send directive' }).click();
    await page.waitForURL(`${hub.url}/inbox`);
    expect(await page.getByRole('status').textContent()).toContain('Queued is not read');

    const printed = await first.done;
    expect(printed.code).toBe(0);
    expect(printed.stdout).toContain('directive from human:');
    expect(printed.stdout).toContain(JSON.stringify(DIRECTIVE).slice(1, -1));

    // The reader acknowledged it; the Inbox shows the track moving to acknowledged.
    await waitFor(
      async () => {
        await page.reload();
        return (await page.getByRole('row').filter({ hasText: 'Run the unit tests' }).textContent())?.includes('acknowledged');
      },
      { what: 'the directive acknowledged on the Inbox page' },
    );
    const text = await page.locator('td.text').first().textContent();
    expect(text).toBe(DIRECTIVE);
    expect(await page.locator('script').count()).toBe(0);
    expect(await page.title()).toBe('Inbox — oh-hai Hub');
    await browser.shot('inbox');
  });

  it('closes the session from the Fleet page after a confirmation; the bridge exits 14 and the run cannot re-register', async () => {
    const waiting = bridge(60);
    // Close only once this reader attends the running connection, so its exit is the kill-switch's.
    await waitFor(() => waiting.stderr().includes('adopting the running background connection'), { what: 'the second bridge adopting the connection' });
    const { page } = browser;
    await waitFor(async () => {
      await goto('/fleet');
      return (await page.getByRole('row').filter({ hasText: sessionId }).count()) === 1;
    });
    expect(await page.getByRole('row').filter({ hasText: sessionId }).textContent()).toContain(HOSTILE_LABEL);
    await browser.shot('fleet');

    await page.getByRole('button', { name: `Close session ${sessionId}` }).click();
    await page.waitForURL(/\/fleet\/close\?session=/);
    const confirm = (await page.locator('main').textContent()) ?? '';
    expect(confirm).toContain('closed_by_operator');
    expect(confirm).toMatch(/queued for it bounces/);
    expect(confirm).toMatch(/Asks waiting on it .* resolve/);
    expect(confirm).toMatch(/re-registering this run is refused/);
    await browser.shot('fleet-close-confirm');

    await page.getByRole('button', { name: `Close session ${sessionId}` }).click();
    await page.waitForURL(`${hub.url}/fleet`);
    expect(await page.getByRole('status').textContent()).toContain(`Closed session ${sessionId}`);
    expect(await page.getByRole('row').filter({ hasText: sessionId }).filter({ hasText: 'Lift' }).count()).toBe(1);
    await browser.shot('fleet-stopped');

    const r = await waiting.done;
    expect(r.code).toBe(14);
    expect(r.stderr).toContain('FATAL (exit 14');

    const again = await api('POST', '/v1/sessions', agent.token, { client_key: 'web-test-probe', name: SESSION_NAME });
    expect(again.status).toBe(403);
    expect(again.json).toMatchObject({ error: { code: 'session_closed_by_operator' } });
  });

  it('lifts the recorded stop from the Fleet page, saying what it lifted; the next bridge run registers anew by itself', async () => {
    const { page } = browser;
    await goto('/fleet');
    await page.getByRole('button', { name: `Lift the stop on ${sessionId}` }).click();
    await page.waitForURL(`${hub.url}/fleet`);
    const said = (await page.getByRole('status').textContent()) ?? '';
    expect(said).toContain(`Lifted 1 operator stop on agent ${agent.id} (session name ${SESSION_NAME}, recorded when ${sessionId} was closed)`);
    expect(said).toContain("the agent's next oh-hai bridge registers a new session (a new address) by itself");
    expect(await page.getByText('No operator stops are recorded.').count()).toBe(1);

    // The agent's next run comes back by itself: a new session under the same name, the address change printed before new mail.
    const back = bridge(60);
    const row = await waitFor(async () => (await liveSessions()).find((r) => r.name === SESSION_NAME && r.session_id !== sessionId), {
      what: 'the bridge registering a new session after the lift',
    });
    expect((await api('POST', '/v1/directives', hub.humanToken, { to: row.address, text: 'back after the lift' })).status).toBe(202);
    const r = await back.done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`address changed (session_closed_by_operator): agent:${agent.id}#${sessionId} → ${row.address}`);
    expect(r.stdout).toContain('"back after the lift"');
    await api('POST', `/v1/sessions/${row.session_id}/close`, agent.token, {});
  });

  it('switches agent messaging off in Settings; an agent send is then refused with messaging_disabled', async () => {
    const { page } = browser;
    await goto('/settings');
    expect(await page.locator('main').textContent()).toContain('Agent messaging is on.');
    await everyControlLabelled();
    await page.getByRole('radio', { name: /Off:/ }).check();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL(`${hub.url}/settings`);
    expect(await page.locator('main').textContent()).toContain('Agent messaging is off.');
    await browser.shot('settings');

    const send = await api('POST', '/v1/messages', agent.token, { to: `agent:${agent.id}`, intent: 'notify', text: 'hello' });
    expect(send.status).toBe(403);
    expect(send.json).toMatchObject({ error: { code: 'messaging_disabled' } });

    await goto('/fleet');
    expect(await page.getByRole('status').first().textContent()).toContain('Agent messaging is off');

    await goto('/settings');
    await page.getByRole('radio', { name: /On:/ }).check();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL(`${hub.url}/settings`);
    const sendOn = await api('POST', '/v1/messages', agent.token, { to: `agent:${agent.id}`, intent: 'notify', text: 'hello' });
    expect(sendOn.status).toBe(202);
  });

  it('revokes an agent after a confirmation; its token is refused from then on', async () => {
    const { page } = browser;
    await goto('/agents');
    await page.getByRole('button', { name: `Revoke agent ${agent.id}` }).click();
    await page.waitForURL(/\/agents\/revoke\?agent=/);
    await browser.shot('agents-revoke-confirm');
    await page.getByRole('button', { name: `Revoke ${agent.id}` }).click();
    await page.waitForURL(`${hub.url}/agents`);
    expect(await page.getByRole('row').filter({ hasText: agent.id }).textContent()).toContain('revoked');
    expect((await api('GET', '/v1/whoami', agent.token)).status).toBe(401);
  });

  it('signs out: the session is gone server-side and pages go back to sign-in', async () => {
    const { page } = browser;
    await goto('/fleet');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${hub.url}/login`);
    await goto('/inbox');
    expect(new URL(page.url()).pathname).toBe('/login');
    console.log(`web inbox screenshots: ${SCREENSHOT_DIR}`);
  });
});
