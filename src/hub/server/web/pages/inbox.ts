import type { Message } from '../../../contract/index.js';
import { html, type SafeHtml } from '../html.js';
import { instant, stateWord } from '../layout.js';

function outcome(m: Message): SafeHtml {
  switch (m.state) {
    case 'queued':
      return html`Queued at the Hub: no consumer holds it yet.`;
    case 'delivered':
      return html`A consumer holds it; no reader has passed it yet.`;
    case 'acknowledged':
      return html`A reader read it. That says the bytes were read, never that the agent acted on them.`;
    case 'bounced':
      return m.prior === 'delivered' ? html`Bounced after delivery: seen by a consumer, never confirmed read.` : html`Bounced while queued: never seen.`;
    case 'expired':
      return html`Expired: not acknowledged within the Hub's message lifetime${m.prior ? html` (got as far as ${m.prior})` : null}.`;
  }
}

function row(m: Message): SafeHtml {
  return html`<tr>
<td>${instant(m.created_at)}</td>
<td><code>${m.to}</code>${m.destination ? html`<br>was ${stateWord(m.destination.snapshot)} when sent` : null}</td>
<td class="text">${m.text}</td>
<td>${stateWord(m.state)}<br>${outcome(m)}</td>
<td><ol class="track">${m.track.map((t) => html`<li>${t.state} ${instant(t.at)}</li>`)}</ol></td>
<td><code>${m.id}</code></td>
</tr>`;
}

export function inboxPage(d: { messages: Message[]; more: boolean }): SafeHtml {
  return html`<p class="lead">MA2H gives a human no mailbox: agents cannot write to you, and directives get no receipts.
What comes back to you is each directive's <strong>delivery track</strong>, moved by the agents' consumers and readers.
This page shows every directive you sent, newest first, with that track: <strong>queued</strong> &rarr; <strong>delivered</strong>
&rarr; <strong>acknowledged</strong>, or <strong>bounced</strong> / <strong>expired</strong> with how far it got.
Reload the page to see a track move.</p>
${
  d.messages.length === 0
    ? html`<p class="empty">You have sent no directives yet. <a href="/send">Send one</a>.</p>`
    : html`<table>
<caption class="skip">Directives you sent</caption>
<thead><tr><th scope="col">Sent (Hub's clock)</th><th scope="col">To</th><th scope="col">Text</th><th scope="col">State</th><th scope="col">Track (Hub's clock)</th><th scope="col">Message id</th></tr></thead>
<tbody>${d.messages.map(row)}</tbody>
</table>`
}
${d.more ? html`<p>Older directives exist; this page shows the newest ${d.messages.length}.</p>` : null}`;
}
