import { type Html, html } from '../html.js';
import type { ConsoleProjection } from '../projections-query.js';
import { olderFormatNote } from '../older-format.js';
import { formatTime, sessionHref } from './layout.js';

/**
 * The projections page's body: each projection's position, lag, fold rate, leader and events set
 * aside (`--skip-invalid`). The page's script fills the fold rate in from successive reads. A
 * projection is halted as `os-audit status` says (its last error is newer than its last
 * progress). Each projection's stopped sessions are listed with the event, the reason and a link
 * to that event; an older runtime's log is marked as one.
 *
 * @example
 * ```ts
 * const body = renderProjections(await readConsoleProjections(db, access));
 * ```
 */
export function renderProjections(projections: readonly ConsoleProjection[]): Html {
  return html`<table class="projections">
<thead><tr><th>projection</th><th>position</th><th>events folded</th><th>rate</th><th>lag</th><th>leader</th><th>stopped sessions</th><th>set aside</th><th>halted (last error)</th></tr></thead>
<tbody>${projections.map(
    (p) => html`<tr data-projection="${p.projection}">
<td>${p.projection}</td>
<td class="number">${p.position}</td>
<td class="number" data-live="applied:${p.projection}">${p.eventsApplied}</td>
<td class="number"><span data-live="rate:${p.projection}">…</span> events/s</td>
<td class="number"><span data-live="lag:${p.projection}">${p.lagEvents}</span> events, <span data-live="lag-seconds:${p.projection}">${p.lagSeconds.toFixed(1)}</span> s</td>
<td>${p.leader === null ? html`<span class="muted">none yet</span>` : html`${p.leader} <span class="${p.leaderLive ? 'ok' : 'bad'}">${p.leaderLive ? 'live' : 'expired'}</span>`}</td>
<td class="number">${p.stoppedTotal}</td>
<td class="number">${p.skippedEvents ?? html`<span class="muted" title="not readable by this role">–</span>`}</td>
<td>${p.lastError === null ? html`<span class="muted">${p.skippedEvents === null ? 'not readable by this role' : 'no'}</span>` : html`<span class="bad">halted</span>: ${p.lastError.message}${p.lastError.at ? html` <span class="muted">(since ${formatTime(p.lastError.at)})</span>` : ''}`}</td>
</tr>`,
  )}</tbody>
</table>
${projections.map((p) => renderStopped(p))}`;
}

function renderStopped(p: ConsoleProjection): Html {
  if (p.stoppedTotal === 0) return html`<p class="muted">${p.projection}: no stopped session.</p>`;
  const more = p.stoppedTotal > p.stopped.length ? html`<p class="muted">The oldest ${p.stopped.length} of ${p.stoppedTotal}; all are in the view os_blocked_sessions.</p>` : '';
  return html`<h2>${p.projection}: ${p.stoppedTotal} stopped ${p.stoppedTotal === 1 ? 'session' : 'sessions'}</h2>
<p class="muted">The projection stopped these sessions at an event: their snapshot is the fold of the events before it, until the event is fixed or set aside (<code>os-audit project --skip-invalid</code>).</p>
<table class="stopped" data-stopped="${p.projection}">
<thead><tr><th>session</th><th>event</th><th>kind</th><th>reason</th><th>problem</th><th>since</th></tr></thead>
<tbody>${p.stopped.map((h) => renderStoppedRow(p.projection, h))}</tbody>
</table>
${more}`;
}

/** One stopped session; an older runtime's log is marked as one rather than left to read as a fault. */
function renderStoppedRow(projection: string, h: ConsoleProjection['stopped'][number]): Html {
  const note = olderFormatNote({ ...h, projection });
  return html`<tr${note === undefined ? '' : html` class="older-format"`}>
<td><a href="${sessionHref(h.sessionId)}">${h.sessionId}</a></td>
<td><a class="event-link" href="${sessionHref(h.sessionId, h.seq)}">seq ${h.seq}</a></td>
<td>${h.kind ?? html`<span class="muted">none</span>`}</td>
<td>${h.reason}</td>
<td class="problem">${h.problem}${note === undefined ? '' : html` <span class="note">${note}</span>`}</td>
<td>${formatTime(h.since)}</td>
</tr>`;
}

