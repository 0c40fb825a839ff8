import { type Html, html } from '../html.js';
import { encodeSessionCursor } from '../session-cursor.js';
import { type ListedStop, SESSION_FILTERS, type SessionFilter, type SessionListQuery, type SessionPage } from '../sessions-query.js';
import { olderFormatNote } from '../older-format.js';
import { formatTime, sessionHref } from './layout.js';

/**
 * The sessions page's body: the search box and state filters (a GET form), a page of sessions
 * by last activity, and the links to the older and newer pages and back to the first.
 *
 * @example
 * ```ts
 * const query = { search: 'sample-', pageSize: 50 };
 * const body = renderSessions(query, await listSessions(db, query));
 * ```
 */
export function renderSessions(query: SessionListQuery, page: SessionPage): Html {
  const params = (extra: Record<string, string>) => {
    const search = new URLSearchParams();
    if (query.search) search.set('q', query.search);
    if (query.filter) search.set('state', query.filter);
    for (const [key, value] of Object.entries(extra)) search.set(key, value);
    const text = search.toString();
    return text === '' ? '/sessions' : `/sessions?${text}`;
  };
  const filterLink = (filter: SessionFilter | undefined, label: string) => {
    const search = new URLSearchParams();
    if (query.search) search.set('q', query.search);
    if (filter) search.set('state', filter);
    const current = filter === query.filter;
    return html`<a class="filter" data-filter="${filter ?? 'all'}" href="/sessions${search.size > 0 ? `?${search}` : ''}"${current ? html` aria-current="true"` : ''}>${label}</a>`;
  };
  return html`<form class="search" method="get" action="/sessions">
<input type="search" name="q" value="${query.search ?? ''}" placeholder="session id (or its beginning)" aria-label="session id">
${query.filter ? html`<input type="hidden" name="state" value="${query.filter}">` : ''}
<button type="submit">Search</button>
</form>
<p class="filters">${filterLink(undefined, 'all')}${(Object.entries(SESSION_FILTERS) as [SessionFilter, string][]).map(([filter, label]) => filterLink(filter, label))}</p>
${
  page.rows.length === 0
    ? html`<p class="empty">No session${query.search || query.filter ? ' matches' : ' is stored yet'}.</p>`
    : html`<table class="sessions">
<thead><tr><th>session</th><th>last activity</th><th>events</th><th>state</th><th>processes</th><th>signals</th><th>budget exceeded</th></tr></thead>
<tbody>${page.rows.map(
        (row) => html`<tr data-session="${row.sessionId}">
<td><a href="${sessionHref(row.sessionId)}">${row.sessionId}</a></td>
<td>${formatTime(row.lastRecordedAt)}</td>
<td class="number">${row.events}</td>
<td>${row.stops.map((stop) => renderListedStop(stop))}${row.suspended ? html`<span class="warn">suspended</span>` : html`<span class="muted">active</span>`}</td>
<td class="number">${row.processes}${row.runningProcesses > 0 ? ` (${row.runningProcesses} running)` : ''}${row.failedProcesses > 0 ? html` <span class="bad">${row.failedProcesses} failed</span>` : ''}</td>
<td class="number">${row.signals}</td>
<td class="number">${row.budgetExceeded > 0 ? html`<span class="warn">${row.budgetExceeded}</span>` : '0'}</td>
</tr>`,
      )}</tbody>
</table>`
}
<nav class="pager">${
    page.previous
      ? html`<a rel="first" href="${params({})}">« newest</a><a rel="prev" href="${params({ before: encodeSessionCursor(page.previous) })}">‹ newer</a>`
      : ''
  }${page.next ? html`<a rel="next" href="${params({ after: encodeSessionCursor(page.next) })}">older ›</a>` : ''}</nav>`;
}

/** `stopped at seq 4 by os_snapshot`; an older runtime's log is said to be one, not flagged as a fault. */
function renderListedStop(stop: ListedStop): Html {
  const note = olderFormatNote(stop);
  const text = `stopped at seq ${stop.seq} by ${stop.projection}`;
  return note === undefined ? html`<span class="bad stop">${text}</span> ` : html`<span class="muted stop" title="${note}">${text} (${note})</span> `;
}
