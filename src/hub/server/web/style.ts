/**
 * The one stylesheet, served at /web.css. It lives in a module rather than a .css file so
 * `tsc` ships it in dist/ with no copy step. States are always words; colour only repeats them.
 */
export const STYLESHEET = `
:root { --fg: #1b1b1b; --muted: #555; --bg: #fff; --line: #c8c8c8; --accent: #0b57d0; --bad: #a50e0e; --good: #137333; --warn: #8a5a00; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.skip { position: absolute; left: -999px; }
.skip:focus { left: 1rem; top: 1rem; background: var(--bg); padding: .25rem .5rem; z-index: 1; }
header { border-bottom: 1px solid var(--line); padding: .5rem 1rem; display: flex; flex-wrap: wrap; gap: .5rem 1.5rem; align-items: center; }
header .brand { font-weight: 700; }
header .who { color: var(--muted); font-size: .9rem; }
nav ul { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: .25rem 1rem; }
nav a[aria-current="page"] { font-weight: 700; text-decoration-thickness: 3px; }
header form { margin-left: auto; }
main { padding: 1rem; max-width: 90rem; overflow-x: auto; }
h1 { font-size: 1.5rem; margin: .5rem 0 1rem; }
h2 { font-size: 1.15rem; margin: 1.5rem 0 .5rem; }
p.lead { color: var(--muted); margin-top: 0; max-width: 48rem; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
th, td { border: 1px solid var(--line); padding: .35rem .5rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.text, .text { white-space: pre-wrap; overflow-wrap: anywhere; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: .9em; overflow-wrap: normal; word-break: keep-all; }
.state { display: inline-block; border: 1px solid currentColor; border-radius: .25rem; padding: 0 .35rem; font-size: .85rem; font-weight: 600; }
.state-online, .state-acknowledged, .state-on { color: var(--good); }
.state-offline, .state-bounced, .state-expired, .state-off, .state-revoked { color: var(--bad); }
.state-unknown, .state-queued, .state-delivered { color: var(--warn); }
.flash { border: 2px solid var(--line); border-left-width: .5rem; padding: .5rem .75rem; margin: 0 0 1rem; max-width: 48rem; }
.flash-ok { border-color: var(--good); }
.flash-error { border-color: var(--bad); }
.flash strong { display: block; }
.secret { display: block; margin-top: .5rem; padding: .5rem; background: #f3f3f3; user-select: all; }
.cols { display: flex; flex-wrap: wrap; gap: 2rem; align-items: flex-start; }
.cols > * { flex: 1 1 22rem; }
aside { border: 1px solid var(--line); padding: .5rem 1rem; background: #fafafa; }
aside h2 { margin-top: .5rem; }
fieldset { max-width: 40rem; }
.instant { white-space: nowrap; }
form.stack label { display: block; font-weight: 600; margin: .75rem 0 .25rem; }
form.stack .hint { display: block; color: var(--muted); font-size: .9rem; margin: 0 0 .25rem; font-weight: 400; }
input[type=text], input[type=password], textarea { width: 100%; max-width: 40rem; font: inherit; padding: .35rem .5rem; border: 1px solid #767676; border-radius: .25rem; }
textarea { min-height: 8rem; }
button { font: inherit; padding: .35rem .9rem; border: 1px solid #555; border-radius: .25rem; background: #f3f3f3; color: var(--fg); cursor: pointer; }
button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
button.danger { background: var(--bad); border-color: var(--bad); color: #fff; }
form.inline { display: inline; margin: 0; }
.actions { display: flex; gap: 1rem; align-items: center; margin: 1rem 0; }
ol.track { margin: 0; padding-left: 1.25rem; }
.empty { color: var(--muted); font-style: italic; }
`;
