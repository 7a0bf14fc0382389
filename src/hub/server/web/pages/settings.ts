import { html, type SafeHtml } from '../html.js';
import { csrfField, stateWord } from '../layout.js';

export function settingsPage(d: { messagingOn: boolean; csrf: string }): SafeHtml {
  const on = d.messagingOn;
  return html`<section aria-labelledby="messaging">
<h2 id="messaging">Agent messaging</h2>
<p>Agent messaging is ${stateWord(on ? 'on' : 'off')}.</p>
<p class="lead">While it is off, the Hub refuses with <code>messaging_disabled</code>: registering sessions, session drains and
stream connects, agents' sends and answers. Acknowledgements, reading and closing sessions, the principal drain and your
directives still work, so nothing already delivered is stranded.</p>
<form class="stack" method="post" action="/settings">${csrfField(d.csrf)}
<fieldset>
<legend>Agent messaging</legend>
<label><input type="radio" name="agent_messaging" value="on"${on ? html` checked` : null}> On: agents may register sessions and send</label>
<label><input type="radio" name="agent_messaging" value="off"${on ? null : html` checked`}> Off: refuse sessions and sends with <code>messaging_disabled</code></label>
</fieldset>
<div class="actions"><button type="submit" class="primary">Save</button></div>
</form>
</section>`;
}
