import { type Html, html } from '../html.js';
import { olderFormatNote } from '../older-format.js';
import type { ConsoleSession, SessionStop } from '../session-query.js';
import { formatTime, sessionHref } from './layout.js';

/**
 * One session's page body: its state, snapshot, processes and signals, and a page of its event
 * timeline with each event's JSON (where the role may read it). The time slider sets `?at=`: the
 * snapshot after that seq, as `os-audit snapshot --at-seq` prints it.
 *
 * @example
 * ```ts
 * const body = renderSession(session, { eventBodies: true });
 * ```
 */
export function renderSession(session: ConsoleSession, access: { eventBodies: boolean }): Html {
  const lastSeq = session.events - 1;
  const at = session.snapshot.kind === 'json' ? session.snapshot.atSeq : null;
  const sliderValue = at ?? lastSeq;
  return html`<dl class="facts">
<dt>events</dt><dd>${session.events} (seq 0 to ${lastSeq})</dd>
<dt>first / last activity</dt><dd>${formatTime(session.firstRecordedAt)} / ${formatTime(session.lastRecordedAt)}</dd>
<dt>projected through</dt><dd>${session.projectedSeq === null ? html`<span class="muted">not yet</span>` : `seq ${session.projectedSeq}`}</dd>
<dt>state</dt><dd>${session.suspended ? html`<span class="warn">suspended</span> ${session.suspendReason ?? ''}` : 'active'}</dd>
${session.stops.map((stop) => renderStop(session.sessionId, stop))}
</dl>
<section id="snapshot">
<h2>Snapshot ${at === null ? html`<span class="muted">(as projected)</span>` : html`<span class="muted">after seq ${at}</span>`}</h2>
${
  access.eventBodies
    ? html`<form class="slider" method="get" action="${sessionHref(session.sessionId)}">
<label for="at">after seq</label>
<input type="range" id="at" name="at" min="0" max="${lastSeq}" value="${sliderValue}" data-slider>
<output for="at" id="at-value">${sliderValue}</output>
<button type="submit">Show</button>
${at === null ? '' : html`<a href="${sessionHref(session.sessionId)}">as projected</a>`}
</form>`
    : html`<p class="muted">No time slider: a snapshot at an earlier seq is folded from the event bodies, which this database role may not read.</p>`
}
${session.snapshot.kind === 'json' ? html`<pre class="json" id="snapshot-json">${session.snapshot.text}</pre>` : html`<p class="notice" id="snapshot-none">${session.snapshot.reason}</p>`}
</section>
<section id="processes">
<h2>Processes <span class="muted">(now)</span></h2>
${
  session.processes.length === 0
    ? html`<p class="muted">None.</p>`
    : html`<table><thead><tr><th>agent</th><th>state</th><th>role</th><th>parent session</th><th>turn</th><th>last seq</th></tr></thead>
<tbody>${session.processes.map(
        (p) => html`<tr><td>${p.agentId}</td><td class="${p.state === 'failed' ? 'bad' : ''}">${p.state}</td><td>${p.role ?? ''}</td><td>${p.parentSessionId ? html`<a href="${sessionHref(p.parentSessionId)}">${p.parentSessionId}</a>` : ''}</td><td class="number">${p.turn}</td><td class="number">${p.lastSeq}</td></tr>`,
      )}</tbody></table>`
}
</section>
<section id="signals">
<h2>Signals <span class="muted">(now)</span></h2>
${
  session.signals.length === 0
    ? html`<p class="muted">None.</p>`
    : html`<table><thead><tr><th>seq</th><th>signal</th><th>disposition</th><th>queue depth</th><th>turn</th></tr></thead>
<tbody>${session.signals.map(
        (s) => html`<tr><td class="number"><a href="${sessionHref(session.sessionId, s.seq)}">${s.seq}</a></td><td>${s.signalId}</td><td>${s.disposition}</td><td class="number">${s.queueDepth}</td><td class="number">${s.turn}</td></tr>`,
      )}</tbody></table>`
}
</section>
<section id="timeline">
<h2>Events</h2>
${access.eventBodies ? '' : html`<p class="notice" id="no-bodies">Event bodies are private to this database role (os_audit_reader reads os_event_activity: events without their JSON).</p>`}
<ol class="timeline">${session.timeline.map(
    (event) => html`<li id="event-${event.seq}" data-seq="${event.seq}"${session.stops.some((stop) => stop.seq === event.seq) ? html` class="stopped-event"` : ''}>
<div class="event-head"><a href="#event-${event.seq}">seq ${event.seq}</a> <b>${event.kind}</b> <span class="muted">${formatTime(event.recordedAt)}</span>${
      access.eventBodies ? html` <a href="${sessionHref(session.sessionId)}?at=${event.seq}#snapshot">snapshot after</a>` : ''
    }</div>
${event.json === null ? '' : html`<pre class="json event-json">${event.json}</pre>`}
</li>`,
  )}</ol>
<nav class="pager">${session.timeline[0] && session.timeline[0].seq > 0 ? html`<a href="${sessionHref(session.sessionId)}#timeline">« first events</a>` : ''}${
    session.timelineNext === null ? '' : html`<a rel="next" href="${sessionHref(session.sessionId)}?from=${session.timelineNext}#timeline">later events »</a>`
  }</nav>
</section>`;
}

/** Where and why one projection stopped the session, with a link to that event; an older runtime's log says it is one. */
function renderStop(sessionId: string, stop: SessionStop): Html {
  const note = olderFormatNote(stop);
  return html`<dt>stopped by ${stop.projection}</dt><dd class="${note === undefined ? 'bad' : 'muted'} stop" data-stop="${stop.projection}">at <a class="event-link" href="${sessionHref(sessionId, stop.seq)}">seq ${stop.seq}</a> (${stop.kind ?? 'no event'}, ${stop.reason}): ${stop.problem}${
    note === undefined ? '' : html` <span class="note">${note}</span>`
  }</dd>`;
}
