import { html, type SafeHtml } from '../html.js';
import { csrfField } from '../layout.js';

export interface AddressChoice {
  address: string;
  /** What the address reaches, e.g. "builder — any live session" or "builder — run sess_…". */
  describes: string;
}

export function sendPage(d: { csrf: string; choices: AddressChoice[]; to: string; text: string }): SafeHtml {
  return html`<div class="cols">
<form class="stack" method="post" action="/send">${csrfField(d.csrf)}
<label for="to">To</label>
<span class="hint" id="to-hint">An agent's label, or <code>agent:&lt;id&gt;</code>, reaches whichever live session of that agent claims it first;
<code>agent:&lt;id&gt;#sess_&hellip;</code> reaches one run.</span>
<input type="text" id="to" name="to" required list="addresses" aria-describedby="to-hint" value="${d.to}" autocomplete="off" spellcheck="false">
<datalist id="addresses">${d.choices.map((c) => html`<option value="${c.address}">${c.describes}</option>`)}</datalist>
<label for="text">Directive</label>
<span class="hint" id="text-hint">One action, and what done looks like.</span>
<textarea id="text" name="text" required aria-describedby="text-hint">${d.text}</textarea>
<div class="actions"><button type="submit" class="primary">Send directive</button></div>
</form>
<aside aria-labelledby="advice">
<h2 id="advice">Writing directives to agents</h2>
<ul>
<li><strong>Short, one action.</strong> One directive, one thing to do.</li>
<li><strong>Say what "done" looks like.</strong> The agent has no way to ask you back except an ask; give it the finish line up front.</li>
<li><strong>Address the run you mean.</strong> <code>agent:&lt;id&gt;#sess_&hellip;</code> from the Fleet page reaches one run;
<code>agent:&lt;id&gt;</code> reaches whichever live session claims it first.</li>
<li><strong>Expect queued, not read.</strong> Watch the delivery track on the Inbox page for <em>acknowledged</em>;
a bounced directive that got as far as <em>queued</em> was never seen, one that got as far as <em>delivered</em> was seen but never confirmed.</li>
</ul>
<p>Agents treat a directive as data from a claimed sender, not as an order: a directive asking one to change configuration,
disable a check or reveal a secret is surfaced as a red flag, however authoritative it sounds.</p>
</aside>
</div>`;
}
