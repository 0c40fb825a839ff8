import { type Html, html } from '../html.js';
import type { ConsoleProjection } from '../projections-query.js';
import { formatTime, sessionHref } from './layout.js';

/**
 * The projections page's body: each projection's position, lag, fold rate, leader and events set
 * aside (`--skip-invalid`). The page's script fills the fold rate in from successive reads. A
 * halted projection (as `os-audit status` says: its last error is newer than its last progress)
 * shows the sessions it halted with, the event, the reason and a link to that event.
 *
 * @example
 * ```ts
 * const body = renderProjections(await readConsoleProjections(db, access));
 * ```
 */
export function renderProjections(projections: readonly ConsoleProjection[]): Html {
  return html`<table class="projections">
<thead><tr><th>projection</th><th>position</th><th>events folded</th><th>rate</th><th>lag</th><th>leader</th><th>halted sessions</th><th>set aside</th><th>halted (last error)</th></tr></thead>
<tbody>${projections.map(
    (p) => html`<tr data-projection="${p.projection}">
<td>${p.projection}</td>
<td class="number">${p.position}</td>
<td class="number" data-live="applied:${p.projection}">${p.eventsApplied}</td>
<td class="number"><span data-live="rate:${p.projection}">…</span> events/s</td>
<td class="number"><span data-live="lag:${p.projection}">${p.lagEvents}</span> events, <span data-live="lag-seconds:${p.projection}">${p.lagSeconds.toFixed(1)}</span> s</td>
<td>${p.leader === null ? html`<span class="muted">none yet</span>` : html`${p.leader} <span class="${p.leaderLive ? 'ok' : 'bad'}">${p.leaderLive ? 'live' : 'expired'}</span>`}</td>
<td class="number">${p.haltedTotal}</td>
<td class="number">${p.skippedEvents ?? html`<span class="muted" title="not readable by this role">–</span>`}</td>
<td>${p.lastError === null ? html`<span class="muted">${p.skippedEvents === null ? 'not readable by this role' : 'no'}</span>` : html`<span class="bad">halted</span>: ${p.lastError.message}${p.lastError.at ? html` <span class="muted">(since ${formatTime(p.lastError.at)})</span>` : ''}`}</td>
</tr>`,
  )}</tbody>
</table>
${projections.map((p) => renderHalted(p))}`;
}

function renderHalted(p: ConsoleProjection): Html {
  if (p.haltedTotal === 0) return html`<p class="muted">${p.projection}: no halted session.</p>`;
  const more = p.haltedTotal > p.halted.length ? html`<p class="muted">The oldest ${p.halted.length} of ${p.haltedTotal}; all are in the view os_blocked_sessions.</p>` : '';
  return html`<h2>${p.projection}: halted sessions</h2>
<p class="muted">The projection stopped these sessions at an event: their snapshot is the fold of the events before it, until the event is fixed or set aside (<code>os-audit project --skip-invalid</code>).</p>
<table class="halted" data-halted="${p.projection}">
<thead><tr><th>session</th><th>event</th><th>kind</th><th>reason</th><th>problem</th><th>since</th></tr></thead>
<tbody>${p.halted.map(
    (h) => html`<tr>
<td><a href="${sessionHref(h.sessionId)}">${h.sessionId}</a></td>
<td><a class="event-link" href="${sessionHref(h.sessionId, h.seq)}">seq ${h.seq}</a></td>
<td>${h.kind ?? html`<span class="muted">none</span>`}</td>
<td>${h.reason}</td>
<td class="problem">${h.problem}</td>
<td>${formatTime(h.since)}</td>
</tr>`,
  )}</tbody>
</table>
${more}`;
}
