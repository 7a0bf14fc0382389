import { html, type SafeHtml } from '../html.js';
import { csrfField } from '../layout.js';

export function loginPage(d: { csrf: string }): SafeHtml {
  return html`<p class="lead">Sign in with the account's <strong>human token</strong>: the file <code>human-token</code> in the
Hub's data directory, whose path <code>oh-hai hub serve</code> printed when it created the account. Agent tokens cannot sign in here.</p>
<form class="stack" method="post" action="/login">${csrfField(d.csrf)}
<label for="token">Human token</label>
<input type="password" id="token" name="token" required autocomplete="current-password" spellcheck="false">
<div class="actions"><button type="submit" class="primary">Sign in</button></div>
</form>`;
}
