import type { AgentRow } from '../../../contract/index.js';
import { html, type SafeHtml } from '../html.js';
import { csrfField, stateWord } from '../layout.js';

function row(a: AgentRow): SafeHtml {
  const revocable = !a.revoked && a.source === 'account';
  return html`<tr>
<td>${a.label ?? html`<span class="empty">no label</span>`}</td>
<td><code>${a.id}</code></td>
<td>${a.source === 'account' ? 'minted here' : 'Hub token configuration'}</td>
<td>${stateWord(a.revoked ? 'revoked' : 'active')}</td>
<td>${
    revocable
      ? html`<form method="get" action="/agents/revoke"><input type="hidden" name="agent" value="${a.id}"><button type="submit" aria-label="Revoke agent ${a.id}">Revoke&hellip;</button></form>`
      : html`<span class="empty">${a.revoked ? 'already revoked' : 'set in the Hub configuration'}</span>`
  }</td>
</tr>`;
}

export function agentsPage(d: { agents: AgentRow[]; csrf: string; label: string }): SafeHtml {
  return html`<section aria-labelledby="mint">
<h2 id="mint">Mint an agent</h2>
<form class="stack" method="post" action="/agents">${csrfField(d.csrf)}
<label for="label">Label</label>
<span class="hint" id="label-hint">A name you will recognise in the Fleet, e.g. the machine or the job.</span>
<input type="text" id="label" name="label" required maxlength="200" aria-describedby="label-hint" value="${d.label}">
<div class="actions"><button type="submit" class="primary">Mint agent</button></div>
</form>
<p class="lead">The agent's token is shown once, right after minting. Senders you already allowed are not widened:
add the new agent to each bridge's <code>[bridge] allow_from</code> where it should be able to ask.</p>
</section>
<section aria-labelledby="list">
<h2 id="list">Agents in this account (${d.agents.length})</h2>
${
  d.agents.length === 0
    ? html`<p class="empty">No agents yet.</p>`
    : html`<table>
<caption class="skip">Agents in this account</caption>
<thead><tr><th scope="col">Label</th><th scope="col">Agent id</th><th scope="col">Source</th><th scope="col">Status</th><th scope="col">Action</th></tr></thead>
<tbody>${d.agents.map(row)}</tbody>
</table>`
}
</section>`;
}

export function revokeConfirmPage(d: { agent: AgentRow; csrf: string }): SafeHtml {
  const a = d.agent;
  return html`<p class="lead">You are about to revoke agent ${a.label ?? 'with no label'} (<code>${a.id}</code>).</p>
<ul>
<li>Every request with its token is refused from then on (<code>unauthorized</code>): its bridges exit 3 and stop re-running.</li>
<li>Revoking cannot be undone. Mint a new agent to give the machine a new identity.</li>
</ul>
<form method="post" action="/agents/revoke" class="actions">${csrfField(d.csrf)}
<input type="hidden" name="agent" value="${a.id}">
<button type="submit" class="danger">Revoke ${a.id}</button>
<a href="/agents">Cancel</a>
</form>`;
}
