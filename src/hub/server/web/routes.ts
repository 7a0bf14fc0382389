import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '../../../util/clock.js';
import type { Coded } from '../../../core/index.js';
import { resolveName, type Resolved } from '../../contract/index.js';
import type { Store } from '../sql.js';
import { html, type SafeHtml } from './html.js';
import { renderPage, type NavKey } from './layout.js';
import { agentsPage, revokeConfirmPage } from './pages/agents.js';
import { closeConfirmPage, fleetPage, liftedFlash, stopWords } from './pages/fleet.js';
import { inboxPage } from './pages/inbox.js';
import { loginPage } from './pages/login.js';
import { sendPage, type AddressChoice } from './pages/send.js';
import { settingsPage } from './pages/settings.js';
import type { ApiAnswer, ApiRefusal, WebHub } from './port.js';
import { checkSameOrigin, reachedOverHttps, readForm, redirect, sendCss, sendHtml } from './http.js';
import { clearedSessionCookie, readSessionCookie, sameSecret, SessionStore, sessionCookie, type Flash, type WebSession } from './sessions.js';
import { hold, LoginForms, SignInThrottle } from './sign-in.js';
import { STYLESHEET } from './style.js';

export interface WebInboxOptions {
  /** The Hub's JSON API as the pages call it. */
  hub: WebHub;
  /** The Hub's store, where signed-in sessions are kept (read once the Hub has started). */
  store: () => Store;
  /** The deployment's signing key: a session's secrets are sealed with a key derived from it. */
  signingKey: string;
  clock: Clock;
  /** A signed-in browser session ends after this long without a request (default 12 h). */
  idleSeconds?: number;
  /** Bound on signed-in browser sessions held (default 1000; the least recently used go first). */
  maxSessions?: number;
  /** A refused sign-in is answered after this, doubling per recent failure from its source (default 1 s). */
  signInDelaySeconds?: number;
  /** Whose request it is, for the sign-in throttle (`--trust-proxy`); default the socket's peer. */
  clientAddress?: (req: IncomingMessage) => string | null;
  /** How many directives the Inbox shows (default 100). */
  inboxLimit?: number;
}

/** Handles the web inbox's paths and returns true; returns false for anything else (the Hub's API and its 404). */
export type WebHandler = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

// A directive's text is at most 65,536 bytes; URL-encoding can triple it.
const MAX_FORM_BYTES = 256 * 1024;

interface Ctx {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  secure: boolean;
}

interface Signed extends Ctx {
  s: WebSession;
  token: string;
  /** The session's flash, taken for this page view (GET only; a POST leaves it for the page it leads to). */
  flash: Flash | null;
}

type PageHandler = (c: Signed) => Promise<void>;
type PostHandler = (c: Signed, form: URLSearchParams) => Promise<void>;

interface Route {
  get?: PageHandler;
  post?: PostHandler;
}

/** The sign-in page's reason code after the Hub stopped accepting a browser's token. */
const TOKEN_REFUSED = 'token_refused';

const sessionCsrf = (s: WebSession | null): ((csrf: string) => boolean) | null => (s ? (csrf) => sameSecret(csrf, s.csrf) : null);

export function createWebInbox(o: WebInboxOptions): WebHandler {
  const sessions = new SessionStore({
    store: o.store,
    clock: o.clock,
    signingKey: o.signingKey,
    idleMs: (o.idleSeconds ?? 12 * 3600) * 1000,
    maxSessions: o.maxSessions ?? 1000,
  });
  const forms = new LoginForms(o.clock, o.signingKey);
  const throttle = new SignInThrottle(o.clock, (o.signInDelaySeconds ?? 1) * 1000);
  const hub = o.hub;
  const inboxLimit = o.inboxLimit ?? 100;

  const show = (c: Signed, title: string, active: NavKey | null, body: SafeHtml, status = 200, flash: Flash | null = c.flash): void => {
    const account = c.s.signedIn.accountLabel ?? c.s.signedIn.accountId;
    sendHtml(c.res, status, renderPage({ title, body, flash, chrome: { active, csrf: c.s.csrf, account } }));
  };

  const refusalText = (r: ApiRefusal): string => `${r.code}: ${r.message}`;

  /** The Hub stopped accepting the token: forget the session and say so on the sign-in page. */
  const signOut = async (c: Signed): Promise<void> => {
    await sessions.destroy(c.s.id);
    redirect(c.res, `/login?why=${TOKEN_REFUSED}`, { 'set-cookie': clearedSessionCookie(c.secure) });
  };

  /** A Hub answer, or null after the page has already told the browser what went wrong. */
  const need = async <T>(c: Signed, a: ApiAnswer<T>): Promise<T | null> => {
    if (a.ok) return a.value;
    if (a.status === 401) {
      await signOut(c);
      return null;
    }
    show(
      c,
      'The Hub refused',
      null,
      html`<p>The Hub's API answered ${a.status} <code>${a.code}</code>: <span class="text">${a.message}</span></p>
<p><a href="/fleet">Back to the Fleet</a></p>`,
      502,
    );
    return null;
  };

  /** After a POST: a flash for the next page view, then See Other (so a reload repeats nothing). */
  const after = async (c: Signed, location: string, flash: Flash): Promise<void> => {
    // Stored before the redirect leaves: the next page may be served by another instance.
    await sessions.setFlash(c.s, flash);
    redirect(c.res, location);
  };

  /** An action's answer as the flash on `location`: what was done (from the answer, when it says more), or the API's refusal after `failed`. */
  const settle = async <T>(c: Signed, a: ApiAnswer<T>, location: string, done: string | ((value: T) => Flash), failed: string): Promise<void> => {
    if (a.ok) await after(c, location, typeof done === 'string' ? { kind: 'ok', text: done } : done(a.value));
    else if (a.status === 401) await signOut(c);
    else await after(c, location, { kind: 'error', text: `${failed} ${refusalText(a)}` });
  };

  const routes: Record<string, Route> = {
    '/fleet': {
      get: async (c) => {
        const [fleet, stops, account] = await Promise.all([hub.fleet(c.token), hub.operatorStops(c.token), hub.account(c.token)]);
        const rows = await need(c, fleet);
        if (!rows) return;
        const stopRows = await need(c, stops);
        if (!stopRows) return;
        const acct = await need(c, account);
        if (!acct) return;
        show(c, 'Fleet', 'fleet', fleetPage({ rows, stops: stopRows, csrf: c.s.csrf, messagingOn: acct.agent_messaging }));
      },
    },
    '/fleet/close': {
      get: async (c) => {
        const id = c.url.searchParams.get('session') ?? '';
        const rows = await need(c, await hub.fleet(c.token));
        if (!rows) return;
        const row = rows.find((r) => r.session_id === id);
        if (!row) {
          show(
            c,
            'Session not live',
            'fleet',
            html`<p>No live session <code>${id}</code> is in the account: it may have lapsed or been closed already.</p>
<p><a href="/fleet">Back to the Fleet</a></p>`,
            404,
          );
          return;
        }
        show(c, 'Close this session?', 'fleet', closeConfirmPage({ row, csrf: c.s.csrf }));
      },
      post: async (c, form) => {
        const id = form.get('session') ?? '';
        await settle(
          c,
          await hub.operatorClose(c.token, id),
          '/fleet',
          `Closed session ${id} (closed_by_operator). Its bridge exits 14; its queued mail bounced and its unread asks resolved. An operator stop is recorded below: lift it to let this run register again.`,
          `Session ${id} was not closed.`,
        );
      },
    },
    '/fleet/lift': {
      post: async (c, form) => {
        const stop = { agent_id: form.get('agent_id') ?? '', client_key: form.get('client_key'), name: form.get('name'), session_id: form.get('session') };
        const a = await hub.liftStop(c.token, {
          agent_id: stop.agent_id,
          ...(stop.client_key ? { client_key: stop.client_key } : {}),
          ...(stop.name ? { name: stop.name } : {}),
        });
        await settle(c, a, '/fleet', (r) => liftedFlash(r.lifted, stop), `The operator stop ${stopWords(stop)} was not lifted; the Hub answered`);
      },
    },
    '/inbox': {
      get: async (c) => {
        const list = await need(c, await hub.sentDirectives(c.token, inboxLimit));
        if (!list) return;
        show(c, 'Inbox', 'inbox', inboxPage({ messages: list.messages, more: list.next !== null }));
      },
    },
    '/send': {
      get: async (c) => {
        const choices = await addressChoices(c);
        if (!choices) return;
        show(c, 'Send directive', 'send', sendPage({ csrf: c.s.csrf, choices, to: c.url.searchParams.get('to') ?? '', text: '' }));
      },
      post: async (c, form) => {
        const to = (form.get('to') ?? '').trim();
        const text = form.get('text') ?? '';
        // A label (or bare id) resolves through the directory this human reads, as `oh-hai hub directive --to` does.
        const dest = await resolveTo(c, to);
        if (dest === null) return;
        if (!dest.ok) {
          const choices = await addressChoices(c);
          if (!choices) return;
          show(c, 'Send directive', 'send', sendPage({ csrf: c.s.csrf, choices, to, text }), 400, {
            kind: 'error',
            text: `The directive was not sent. ${dest.error.message}.`,
          });
          return;
        }
        const shown = dest.value.label === null ? dest.value.address : `${dest.value.address} (${dest.value.label})`;
        const a = await hub.directive(c.token, dest.value.address, text);
        if (a.ok) {
          const snap = a.value.destination?.snapshot ?? 'unknown';
          await after(c, '/inbox', {
            kind: 'ok',
            text: `Queued directive ${a.value.id} to ${shown}; the destination was ${snap} when sent${
              snap === 'unknown' ? ' (the Hub has no presence signal for it, which does not mean it is down)' : ''
            }. Queued is not read: watch its track below for acknowledged.`,
          });
          return;
        }
        if (a.status === 401) return signOut(c);
        const choices = await addressChoices(c);
        if (!choices) return;
        show(c, 'Send directive', 'send', sendPage({ csrf: c.s.csrf, choices, to, text }), a.status, {
          kind: 'error',
          text: `The directive was not sent. ${refusalText(a)}`,
        });
      },
    },
    '/agents': {
      get: async (c) => {
        const agents = await need(c, await hub.agents(c.token));
        if (!agents) return;
        show(c, 'Agents', 'agents', agentsPage({ agents, csrf: c.s.csrf, label: '' }));
      },
      post: async (c, form) => {
        const label = (form.get('label') ?? '').trim();
        const a = await hub.mintAgent(c.token, label);
        if (a.ok) {
          await after(c, '/agents', {
            kind: 'ok',
            text: `Minted agent ${a.value.agent.label ?? ''} (${a.value.agent.id}). Copy its token now: this page shows it once and the Hub cannot show it again.`,
            secret: a.value.token,
          });
          return;
        }
        if (a.status === 401) return signOut(c);
        const agents = await need(c, await hub.agents(c.token));
        if (!agents) return;
        show(c, 'Agents', 'agents', agentsPage({ agents, csrf: c.s.csrf, label }), a.status, {
          kind: 'error',
          text: `No agent was minted. ${refusalText(a)}`,
        });
      },
    },
    '/agents/revoke': {
      get: async (c) => {
        const id = c.url.searchParams.get('agent') ?? '';
        const agents = await need(c, await hub.agents(c.token));
        if (!agents) return;
        const agent = agents.find((a) => a.id === id && a.source === 'account' && !a.revoked);
        if (!agent) {
          show(
            c,
            'Agent not found',
            'agents',
            html`<p>No active agent <code>${id}</code> was minted in this account.</p><p><a href="/agents">Back to Agents</a></p>`,
            404,
          );
          return;
        }
        show(c, 'Revoke this agent?', 'agents', revokeConfirmPage({ agent, csrf: c.s.csrf }));
      },
      post: async (c, form) => {
        const id = form.get('agent') ?? '';
        await settle(
          c,
          await hub.revokeAgent(c.token, id),
          '/agents',
          `Revoked agent ${id}: its token is refused from now on.`,
          `Agent ${id} was not revoked.`,
        );
      },
    },
    '/settings': {
      get: async (c) => {
        const acct = await need(c, await hub.account(c.token));
        if (!acct) return;
        show(c, 'Settings', 'settings', settingsPage({ messagingOn: acct.agent_messaging !== false, csrf: c.s.csrf }));
      },
      post: async (c, form) => {
        const choice = form.get('agent_messaging');
        if (choice !== 'on' && choice !== 'off') {
          await after(c, '/settings', { kind: 'error', text: 'Choose On or Off for Agent messaging.' });
          return;
        }
        await settle(
          c,
          await hub.setMessaging(c.token, choice === 'on'),
          '/settings',
          choice === 'on'
            ? 'Agent messaging is on: agents may register sessions and send.'
            : 'Agent messaging is off: sessions and agents’ sends are refused with messaging_disabled.',
          'The setting was not changed.',
        );
      },
    },
  };

  /** The form's To: an address as written (labelled when the directory knows it), or a name resolved; null when the page was already answered. */
  async function resolveTo(c: Signed, to: string): Promise<Coded<Resolved> | null> {
    const agents = await need(c, await hub.agents(c.token));
    if (!agents) return null;
    return resolveName(to, agents, 'To');
  }

  async function addressChoices(c: Signed): Promise<AddressChoice[] | null> {
    const [fleet, agents] = await Promise.all([hub.fleet(c.token), hub.agents(c.token)]);
    const rows = await need(c, fleet);
    if (!rows) return null;
    const list = await need(c, agents);
    if (!list) return null;
    return [
      ...list.filter((a) => !a.revoked).map((a) => ({ address: `agent:${a.id}`, describes: `${a.label ?? a.id}: whichever live session claims it first` })),
      ...rows.map((r) => ({ address: r.address, describes: `${r.agent_label ?? r.agent_id}: run ${r.session_id}${r.name ? ` (${r.name})` : ''}` })),
    ];
  }

  function loginView(c: Ctx, status: number, flash: Flash | null, headers: Record<string, string> = {}): void {
    sendHtml(c.res, status, renderPage({ title: 'Sign in', chrome: null, flash, body: loginPage({ csrf: forms.issue() }) }), headers);
  }

  async function login(c: Ctx, current: WebSession | null): Promise<void> {
    if (c.req.method === 'GET') {
      if (current) return redirect(c.res, '/fleet');
      // A fixed reason code, never text from the URL: the page says only what this Hub wrote.
      const why =
        c.url.searchParams.get('why') === TOKEN_REFUSED
          ? { kind: 'error' as const, text: 'The Hub no longer accepts the token this browser signed in with. Sign in again.' }
          : null;
      return loginView(c, 200, why);
    }
    const form = await guardPost(c, (csrf) => forms.check(csrf));
    if (!form) return;
    const token = (form.get('token') ?? '').trim();
    const refuse = (text: string, status: number) => loginView(c, status, { kind: 'error', text });
    if (!token) return refuse('Paste the human token into the field.', 400);
    const source = (o.clientAddress ? o.clientAddress(c.req) : c.req.socket.remoteAddress) ?? 'unknown';
    const turn = await throttle.attempt(source, async () => {
      const who = await hub.whoami(token);
      if (!who.ok) {
        if (who.status !== 401) return refuse(`The Hub could not check the token. ${refusalText(who)}`, 502);
        // A guess at the human token: held, longer for each recent one from this source.
        await hold(throttle.refused(source));
        return refuse('This Hub does not accept that token. Check that you pasted the whole human token.', 401);
      }
      if (who.value.kind !== 'human') return refuse('That is an agent token. Sign in with the account’s human token.', 403);
      throttle.succeeded(source);
      const s = await sessions.signIn(current, { token, accountId: who.value.account.id, accountLabel: who.value.account.label });
      redirect(c.res, '/fleet', { 'set-cookie': sessionCookie(s.id, c.secure) });
    });
    if (turn.kind === 'busy') {
      loginView(
        c,
        429,
        { kind: 'error', text: `Too many sign-ins from your address are waiting after refused tokens. Try again in ${turn.retryAfterSeconds} s.` },
        {
          'retry-after': String(turn.retryAfterSeconds),
        },
      );
    }
  }

  /**
   * The checks every POST passes before it may act: same origin, then the form's CSRF token —
   * the session's, or the stateless sign-in form's. `csrfOk` null: there is no session.
   */
  async function guardPost(c: Ctx, csrfOk: ((csrf: string) => boolean) | null): Promise<URLSearchParams | null> {
    const origin = checkSameOrigin(c.req, c.secure);
    if (!origin.ok) {
      c.req.resume();
      refusePage(c, 403, 'Form refused', `This form was not sent from this Hub's own pages: ${origin.reason}.`);
      return null;
    }
    const read = await readForm(c.req, MAX_FORM_BYTES);
    if (!read.ok) {
      refusePage(c, read.status, 'Form refused', read.message);
      return null;
    }
    if (!csrfOk) {
      // No session: the form predates a restart or an expiry. Start over from the sign-in page.
      redirect(c.res, '/login');
      return null;
    }
    if (!csrfOk(read.form.get('csrf') ?? '')) {
      refusePage(
        c,
        403,
        'Form refused',
        'This form carries no valid form token for your session (it may be from an older page). Reload the page and submit it again.',
      );
      return null;
    }
    return read.form;
  }

  function refusePage(c: Ctx, status: number, title: string, text: string): void {
    sendHtml(c.res, status, renderPage({ title, chrome: null, body: html`<p class="text">${text}</p><p><a href="/fleet">Go to the Fleet</a></p>` }));
  }

  return async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://web.invalid');
    const path = url.pathname;
    const isWebPath = path === '/' || path === '/web.css' || path === '/login' || path === '/logout' || Object.hasOwn(routes, path);
    if (!isWebPath) return false;
    const c: Ctx = { req, res, url, secure: reachedOverHttps(req) };
    const method = req.method ?? 'GET';
    const current = await sessions.get(readSessionCookie(req.headers.cookie));

    if (path === '/web.css') {
      if (method !== 'GET') return methodNotAllowed(c, 'GET');
      sendCss(res, STYLESHEET);
      return true;
    }
    if (path === '/') {
      if (method !== 'GET') return methodNotAllowed(c, 'GET');
      redirect(res, current ? '/fleet' : '/login');
      return true;
    }
    if (path === '/login') {
      if (method !== 'GET' && method !== 'POST') return methodNotAllowed(c, 'GET, POST');
      await login(c, current);
      return true;
    }
    if (path === '/logout') {
      if (method !== 'POST') return methodNotAllowed(c, 'POST');
      if (await guardPost(c, sessionCsrf(current))) {
        if (current) await sessions.destroy(current.id);
        redirect(res, '/login', { 'set-cookie': clearedSessionCookie(c.secure) });
      }
      return true;
    }

    const route = routes[path]!;
    const allowed = [route.get ? 'GET' : null, route.post ? 'POST' : null].filter((m): m is string => m !== null);
    const handler = method === 'GET' ? route.get : method === 'POST' ? route.post : undefined;
    if (!handler) return methodNotAllowed(c, allowed.join(', '));
    if (!current) {
      if (method === 'POST') req.resume();
      redirect(res, '/login');
      return true;
    }
    const flash = method === 'GET' ? await sessions.takeFlash(current) : null;
    const signed: Signed = { ...c, s: current, token: current.signedIn.token, flash };
    if (method === 'GET') await route.get!(signed);
    else {
      const form = await guardPost(c, sessionCsrf(current));
      if (form) await route.post!(signed, form);
    }
    return true;
  };

  function methodNotAllowed(c: Ctx, allow: string): true {
    c.req.resume();
    sendHtml(c.res, 405, renderPage({ title: 'Method not allowed', chrome: null, body: html`<p>This page answers ${allow} only.</p>` }), { allow });
    return true;
  }
}
