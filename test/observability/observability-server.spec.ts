import { describe, expect, it } from 'vitest';
import { json, startObservabilityServer } from '../../src/observability/observability-server.js';

describe('the observability server', () => {
  it('serves its routes to GET and HEAD on a free port, answers JSON errors otherwise, and closes with scrapers connected', async () => {
    let calls = 0;
    const server = await startObservabilityServer('127.0.0.1', 0, {
      '/healthz': () => json(200, { status: 'ok', calls: ++calls }),
      '/broken': () => {
        throw new Error('no status yet');
      },
    });
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
    expect(server.port).toBeGreaterThan(0);

    const ok = await fetch(`${server.url}/healthz?verbose=1`);
    expect([ok.status, ok.headers.get('content-type'), ok.headers.get('cache-control')]).toEqual([200, 'application/json; charset=utf-8', 'no-store']);
    expect(await ok.json()).toEqual({ status: 'ok', calls: 1 });
    const head = await fetch(`${server.url}/healthz`, { method: 'HEAD' });
    expect([head.status, await head.text()]).toEqual([200, '']);

    const post = await fetch(`${server.url}/healthz`, { method: 'POST' });
    expect([post.status, post.headers.get('allow'), await post.json()]).toEqual([405, 'GET, HEAD', { error: 'only GET and HEAD' }]);
    const missing = await fetch(`${server.url}/metrics`);
    expect([missing.status, await missing.json()]).toEqual([404, { error: 'no such path; try /healthz, /broken' }]);
    const broken = await fetch(`${server.url}/broken`);
    expect([broken.status, await broken.json()]).toEqual([500, { error: 'no status yet' }]);

    // fetch keeps its connection alive; close() must not wait for it.
    await server.close();
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
  });

  it('routes prefixes with the rest of the path decoded, the longest prefix first and an exact path before any, with the query string and extra headers', async () => {
    const server = await startObservabilityServer('127.0.0.1', 0, {
      '/sessions': ({ url }) => json(200, { list: url.searchParams.get('q') }),
      '/sessions/*': ({ rest, url }) => json(200, { session: rest, at: url.searchParams.get('at') }),
      '/sessions/special/*': ({ rest }) => ({ status: 200, contentType: 'text/plain', body: `special ${rest}`, headers: { 'X-Route': 'special' } }),
    });
    try {
      expect(await (await fetch(`${server.url}/sessions?q=a%20b`)).json()).toEqual({ list: 'a b' });
      expect(await (await fetch(`${server.url}/sessions/a%2Fb%3C?at=3`)).json()).toEqual({ session: 'a/b<', at: '3' });
      const special = await fetch(`${server.url}/sessions/special/x`);
      expect([await special.text(), special.headers.get('x-route')]).toEqual(['special x', 'special']);
      // A malformed escape matches no prefix: not found, not a server error.
      expect((await fetch(`${server.url}/sessions/%E0%A4%A`)).status).toBe(404);
      expect((await fetch(`${server.url}/sessionsX`)).status).toBe(404);
    } finally {
      await server.close();
    }
  });

  it('fails to start on a port in use', async () => {
    const first = await startObservabilityServer('127.0.0.1', 0, {});
    try {
      await expect(startObservabilityServer('127.0.0.1', first.port, {})).rejects.toMatchObject({ code: 'EADDRINUSE' });
    } finally {
      await first.close();
    }
  });
});
