import type { FleetRow } from '../../../contract/index.js';
import { html, type SafeHtml } from '../html.js';
import { csrfField, instant, stateWord } from '../layout.js';
import type { OperatorStop } from '../../../contract/index.js';
import type { Flash } from '../sessions.js';

const agentCell = (label: string | null, id: string): SafeHtml => html`${label ?? html`<span class="empty">no label</span>`}<br><code>${id}</code>`;

function sessionRow(r: FleetRow): SafeHtml {
  return html`<tr>
<td><code>${r.address}</code>${r.name ? html`<br>name <code>${r.name}</code>` : null}</td>
<td>${agentCell(r.agent_label, r.agent_id)}</td>
<td>${stateWord(r.reachability)}</td>
<td>${instant(r.expires_at)}</td>
<td>${r.last_renewed_at ? instant(r.last_renewed_at) : html`<span class="empty">never</span>`}</td>
<td>${r.holder ? html`host <code>${r.holder.host}</code><br>pid <code>${r.holder.pid}</code>` : html`<span class="empty">no consumer</span>`}</td>
<td><form method="get" action="/fleet/close"><input type="hidden" name="session" value="${r.session_id}"><button type="submit" aria-label="Close session ${r.session_id}">Close session&hellip;</button></form></td>
</tr>`;
}

function stopRow(s: OperatorStop, csrf: string): SafeHtml {
  return html`<tr>
<td>${agentCell(s.agent_label, s.agent_id)}</td>
<td>${s.name ? html`<code>${s.name}</code>` : html`<span class="empty">none</span>`}</td>
<td>${s.client_key ? html`<code>${s.client_key}</code>` : html`<span class="empty">none</span>`}</td>
<td>${s.session_id ? html`<code>${s.session_id}</code>` : html`<span class="empty">unknown</span>`}</td>
<td>${instant(s.recorded_at)}</td>
<td><form method="post" action="/fleet/lift">${csrfField(csrf)}
<input type="hidden" name="agent_id" value="${s.agent_id}">
${s.client_key ? html`<input type="hidden" name="client_key" value="${s.client_key}">` : null}
${s.name ? html`<input type="hidden" name="name" value="${s.name}">` : null}
${s.session_id ? html`<input type="hidden" name="session" value="${s.session_id}">` : null}
<button type="submit" aria-label="Lift the stop on ${s.session_id ?? s.agent_id}">Lift</button></form></td>
</tr>`;
}

/** The stop a Lift form names (the row's fields, as posted). */
export interface LiftedStop {
  agent_id: string;
  client_key: string | null;
  name: string | null;
  session_id: string | null;
}

/** Which stop, in the words of its row: the agent, the session name, the session whose close recorded it. */
export function stopWords(s: LiftedStop): string {
  const about = [s.name ? `session name ${s.name}` : null, s.session_id ? `recorded when ${s.session_id} was closed` : null].filter((x) => x !== null);
  return `on agent ${s.agent_id}${about.length > 0 ? ` (${about.join(', ')})` : ''}`;
}

/**
 * What a Lift did, and what happens next on the agent's side: its bridge was told (exit 14)
 * not to re-run, and nothing reaches it when a stop goes, so the human is the one to say so.
 */
export function liftedFlash(lifted: number | null, stop: LiftedStop): Flash {
  const next = `${stop.session_id ?? 'The closed session'} stays closed; the agent's next oh-hai bridge registers a new session (a new address) by itself.`;
  if (lifted === 0) {
    return {
      kind: 'ok',
      text: `Nothing was lifted: no operator stop ${stopWords(stop)} is recorded any more — it was lifted already (from another page, by another human, or with oh-hai hub lift). ${next}`,
    };
  }
  const what = lifted === null ? 'the operator stop' : lifted === 1 ? '1 operator stop' : `${lifted} operator stops`;
  return {
    kind: 'ok',
    text: `Lifted ${what} ${stopWords(stop)}: that run may register again. ${next} Its last run was told not to re-run (exit 14), so tell the agent it may.`,
  };
}

export function messagingOffBanner(messagingOn: boolean | null): SafeHtml | null {
  return messagingOn === false
    ? html`<div class="flash flash-error" role="status"><strong>Agent messaging is off</strong>
Sessions and agents' sends are refused with <code>messaging_disabled</code> until you switch it on in <a href="/settings">Settings</a>.</div>`
    : null;
}

export function fleetPage(d: { rows: FleetRow[]; stops: OperatorStop[]; csrf: string; messagingOn: boolean | null }): SafeHtml {
  return html`${messagingOffBanner(d.messagingOn)}
<p class="lead">Every live session in the account: one row per run of an agent. Instants are the Hub's clock, shown as the Hub
reported them. Reachability is <strong>online</strong> when a consumer drained or connected within the presence window,
<strong>unknown</strong> when the address was never drained, which is not the same as down.</p>
<section aria-labelledby="live">
<h2 id="live">Live sessions (${d.rows.length})</h2>
${
  d.rows.length === 0
    ? html`<p class="empty">No live sessions.</p>`
    : html`<table>
<caption class="skip">Live sessions</caption>
<thead><tr><th scope="col">Address</th><th scope="col">Agent</th><th scope="col">Reachability</th><th scope="col">Lease expires (Hub's clock)</th><th scope="col">Last renewed (Hub's clock)</th><th scope="col">Holder</th><th scope="col">Kill-switch</th></tr></thead>
<tbody>${d.rows.map(sessionRow)}</tbody>
</table>`
}
</section>
<section aria-labelledby="stops">
<h2 id="stops">Recorded operator stops (${d.stops.length})</h2>
<p class="lead">A closed session leaves a stop behind: the same run re-registering is refused with
<code>session_closed_by_operator</code> until you lift it. Lifting does not reopen the closed session; the run registers a new one.</p>
${
  d.stops.length === 0
    ? html`<p class="empty">No operator stops are recorded.</p>`
    : html`<table>
<caption class="skip">Recorded operator stops</caption>
<thead><tr><th scope="col">Agent</th><th scope="col">Session name</th><th scope="col">Client key</th><th scope="col">Closed session</th><th scope="col">Recorded (Hub's clock)</th><th scope="col">Action</th></tr></thead>
<tbody>${d.stops.map((s) => stopRow(s, d.csrf))}</tbody>
</table>`
}
</section>`;
}

export function closeConfirmPage(d: { row: FleetRow; csrf: string }): SafeHtml {
  const r = d.row;
  return html`<p class="lead">You are about to close <code>${r.address}</code>
(agent ${r.agent_label ?? 'with no label'}, <code>${r.agent_id}</code>). This is the operator kill-switch.</p>
<h2>What happens when you confirm</h2>
<ul>
<li>The session becomes <strong>closed_by_operator</strong>. Its bridge exits 14 and is told not to re-run or start a replacement.</li>
<li>Mail queued for it <strong>bounces</strong>: each sender gets a bounced receipt saying how far the message got.</li>
<li>Asks waiting on it that were never read <strong>resolve</strong> as bounced, so nobody waits on an answer that cannot come.</li>
<li>An operator stop is <strong>recorded</strong>: re-registering this run is refused (<code>session_closed_by_operator</code>)
until you lift the stop on the Fleet page.</li>
</ul>
<form method="post" action="/fleet/close" class="actions">${csrfField(d.csrf)}
<input type="hidden" name="session" value="${r.session_id}">
<button type="submit" class="danger">Close session ${r.session_id}</button>
<a href="/fleet">Cancel, keep it running</a>
</form>`;
}
