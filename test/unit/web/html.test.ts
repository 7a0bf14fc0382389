import { describe, expect, it } from 'vitest';
import { escapeHtml, html, SafeHtml } from '../../../src/hub/server/web/html.js';
import { renderPage, stateWord } from '../../../src/hub/server/web/layout.js';
import { inboxPage } from '../../../src/hub/server/web/pages/inbox.js';
import type { Message } from '../../../src/hub/contract/index.js';

const hostile = `<script>alert("x")</script><img src=x onerror='y'>&amp;`;

describe('html', () => {
  it('escapes every markup character of an interpolated string', () => {
    expect(escapeHtml(hostile)).toBe('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=&#39;y&#39;&gt;&amp;amp;');
    expect(html`<p>${hostile}</p>`.value).toBe(`<p>${escapeHtml(hostile)}</p>`);
  });

  it('escapes inside attribute values, so a value cannot close its quote', () => {
    expect(html`<input value="${'" autofocus onfocus="x'}">`.value).toBe('<input value="&quot; autofocus onfocus=&quot;x">');
  });

  it('keeps nested SafeHtml, renders arrays item by item, and drops null, undefined and false', () => {
    const inner = html`<b>${'<i>'}</b>`;
    expect(html`${inner}${[html`<br>`, '<br>']}${null}${undefined}${false}${0}`.value).toBe('<b>&lt;i&gt;</b><br>&lt;br&gt;0');
    expect(new SafeHtml('<x>').toString()).toBe('<x>');
  });

  it('shows a state as a word, with a class derived only from safe characters', () => {
    expect(stateWord('online').value).toBe('<span class="state state-online">online</span>');
    expect(stateWord('"><x').value).toBe('<span class="state state-x">&quot;&gt;&lt;x</span>');
  });

  it('renders an agent-supplied text in a whole page as text, never as markup', () => {
    const m: Message = {
      id: 'msg_1',
      from: 'human:acct_1',
      to: 'agent:agt_1',
      intent: 'directive',
      text: hostile,
      created_at: '2026-09-18T14:33:07.000Z',
      state: 'bounced',
      prior: 'queued',
      track: [
        { state: 'queued', at: '2026-09-18T14:33:07.000Z' },
        { state: 'bounced', at: '2026-09-18T14:34:07.000Z' },
      ],
      destination: { address: 'agent:agt_1', snapshot: 'unknown' },
      response: null,
      in_reply_to: null,
      idempotent_replay: false,
    };
    const page = renderPage({ title: 'Inbox', chrome: { active: 'inbox', csrf: 'c', account: '<acct>' }, body: inboxPage({ messages: [m], more: false }) });
    expect(page).not.toContain('<script>');
    expect(page).not.toContain('<img');
    expect(page).toContain(escapeHtml(hostile));
    expect(page).toContain('&lt;acct&gt;');
    expect(page).toContain('Bounced while queued: never seen.');
  });
});
