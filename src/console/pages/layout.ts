import { type Html, html } from '../html.js';

/** What every page shares: its title, which tab is current, and whether the role hides event bodies. */
export interface PageFrame {
  title: string;
  tab: 'projections' | 'sessions';
  /** A note under the header, e.g. that this role does not see event bodies. */
  notice?: string;
}

/**
 * A whole console page: header with the tabs and the live figures (refreshed by
 * `/assets/console.js` every second), the body, no external resource.
 *
 * @example
 * ```ts
 * const page = renderLayout({ title: 'Projections', tab: 'projections' }, html`<p>…</p>`);
 * ```
 */
export function renderLayout(frame: PageFrame, body: Html): Html {
  const tab = (name: PageFrame['tab'], href: string, label: string) => html`<a href="${href}"${name === frame.tab ? html` aria-current="page"` : ''}>${label}</a>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${frame.title} · os-audit</title>
<link rel="stylesheet" href="/assets/console.css">
<script type="module" src="/assets/console.js"></script>
</head>
<body>
<header>
  <span class="brand">os-audit</span>
  <nav>${tab('projections', '/', 'Projections')}${tab('sessions', '/sessions', 'Sessions')}</nav>
  <span class="live" title="refreshed every second">appended <b data-live="appended">…</b> events/s</span>
</header>
${frame.notice ? html`<p class="notice" id="notice">${frame.notice}</p>` : ''}
<main>
<h1>${frame.title}</h1>
${body}
</main>
</body>
</html>
`;
}

/**
 * A date as ISO 8601 in UTC, to the millisecond.
 *
 * @example
 * ```ts
 * formatTime(new Date(0)); // '1970-01-01 00:00:00.000Z'
 * ```
 */
export function formatTime(date: Date): string {
  return date.toISOString().replace('T', ' ');
}

/**
 * The link to a session's page, at an event of its timeline when `seq` is given.
 *
 * @example
 * ```ts
 * sessionHref('a/b', 7); // '/sessions/a%2Fb?from=7#event-7'
 * ```
 */
export function sessionHref(sessionId: string, seq?: number): string {
  const base = `/sessions/${encodeURIComponent(sessionId)}`;
  return seq === undefined ? base : `${base}?from=${seq}#event-${seq}`;
}
