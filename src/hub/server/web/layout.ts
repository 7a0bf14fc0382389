import { html, type HtmlValue, type SafeHtml } from './html.js';
import type { Flash } from './sessions.js';

export type NavKey = 'fleet' | 'inbox' | 'send' | 'agents' | 'settings';

const NAV: readonly { key: NavKey; href: string; label: string }[] = [
  { key: 'fleet', href: '/fleet', label: 'Fleet' },
  { key: 'inbox', href: '/inbox', label: 'Inbox' },
  { key: 'send', href: '/send', label: 'Send directive' },
  { key: 'agents', href: '/agents', label: 'Agents' },
  { key: 'settings', href: '/settings', label: 'Settings' },
];

export interface Frame {
  title: string;
  body: SafeHtml;
  /** Signed-in chrome (navigation, sign out); null on the sign-in page. */
  chrome: { active: NavKey | null; csrf: string; account: string } | null;
  flash?: Flash | null;
}

/** Every hidden CSRF field comes from here, so no form can forget it. */
export const csrfField = (csrf: string): SafeHtml => html`<input type="hidden" name="csrf" value="${csrf}">`;

export function flashBox(f: Flash | null | undefined): HtmlValue {
  if (!f) return null;
  return html`<div class="flash flash-${f.kind}" role="${f.kind === 'error' ? 'alert' : 'status'}">
<strong>${f.kind === 'error' ? 'Refused' : 'Done'}</strong><span class="text">${f.text}</span>${
    f.secret ? html`<code class="secret" id="once-secret">${f.secret}</code>` : null
  }</div>`;
}

/** A Hub instant, verbatim: never turned into an age or a time remaining on our clock. */
export const instant = (iso: string): SafeHtml => html`<time class="instant mono" datetime="${iso}">${iso}</time>`;

/** A state shown as a word first; the colour class only repeats it. */
export const stateWord = (word: string): SafeHtml => html`<span class="state state-${word.replace(/[^a-z_]/g, '')}">${word}</span>`;

export function renderPage(f: Frame): string {
  const chrome = f.chrome;
  const header = chrome
    ? html`<header>
<span class="brand">oh-hai Hub</span>
<nav aria-label="Main"><ul>${NAV.map(
        (n) => html`<li><a href="${n.href}"${chrome.active === n.key ? html` aria-current="page"` : null}>${n.label}</a></li>`,
      )}</ul></nav>
<span class="who">Signed in as the account&rsquo;s human (${chrome.account})</span>
<form class="inline" method="post" action="/logout">${csrfField(chrome.csrf)}<button type="submit">Sign out</button></form>
</header>`
    : html`<header><span class="brand">oh-hai Hub</span></header>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${f.title} &mdash; oh-hai Hub</title>
<link rel="stylesheet" href="/web.css">
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
${header}
<main id="main">
<h1>${f.title}</h1>
${flashBox(f.flash)}
${f.body}
</main>
</body>
</html>
`.value;
}
