import { networkInterfaces } from 'node:os';
import { describe, expect, it } from 'vitest';
import { SECURITY_HEADERS } from '../../src/observability/http-access.js';
import { json, startObservabilityServer } from '../../src/observability/observability-server.js';
import { basicAuth as basic, httpGet as get } from '../support/http-get.js';

/** The security headers as node:http reads them (names in lower case). */
const securityHeaders = Object.fromEntries(Object.entries(SECURITY_HEADERS).map(([name, value]) => [name.toLowerCase(), value]));

/** Routes of every kind the daemon serves: a page, its JSON, an asset, the metrics, the probes, and one that fails. */
const everyKind = {
  '/': () => ({ status: 200, contentType: 'text/html; charset=utf-8', body: '<p>projections</p>' }),
  '/api/live': () => json(200, { rate: 0 }),
  '/assets/*': () => ({ status: 200, contentType: 'text/css; charset=utf-8', body: 'p {}' }),
  '/metrics': () => ({ status: 200, contentType: 'text/plain; version=0.0.4', body: 'os_audit_leader 1\n' }),
  '/healthz': () => json(200, { status: 'ok' }),
  '/readyz': () => json(503, { status: 'not ready' }),
  '/broken': () => {
    throw new Error('no status yet');
  },
};

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

  it('answers only the Host names it serves, 421 in one line of text to others, on every route but the probes', async () => {
    const server = await startObservabilityServer('127.0.0.1', 0, everyKind, { allowedHosts: ['audit.example.com', 'Console.Example.com:8443'] });
    try {
      const port = server.port;
      for (const path of ['/', '/api/live', '/assets/console.css', '/metrics', '/broken', '/no-such-path']) {
        for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, 'LOCALHOST', `audit.example.com:${port}`, 'console.example.com:8443']) {
          expect([path, host, (await get(`${server.url}${path}`, { Host: host })).status]).not.toContain(421);
        }
        for (const host of ['evil.example.com', `evil.example.com:${port}`, 'localhost.evil.example.com', 'console.example.com:9464', '10.1.2.3']) {
          const refused = await get(`${server.url}${path}`, { Host: host });
          expect([path, host, refused.status, refused.headers['content-type'], refused.body]).toEqual([
            path,
            host,
            421,
            'text/plain; charset=utf-8',
            'misdirected request: this server answers only its own host names (see --allowed-host)\n',
          ]);
        }
      }
      // A kubelet probes with the pod's IP as Host.
      for (const path of ['/healthz', '/readyz']) expect((await get(`${server.url}${path}`, { Host: '10.1.2.3:9464' })).status).not.toBe(421);
    } finally {
      await server.close();
    }
  });

  it('serves the Host of its own address, each interface\'s when it listens on all of them', async () => {
    const server = await startObservabilityServer('0.0.0.0', 0, everyKind, { authToken: 't' });
    try {
      const url = `http://127.0.0.1:${server.port}`;
      const bearer = { Authorization: 'Bearer t' };
      for (const address of ['127.0.0.1', '0.0.0.0', ...Object.values(networkInterfaces()).flat().filter((each) => each?.family === 'IPv4').map((each) => each!.address)]) {
        expect([address, (await get(`${url}/`, { ...bearer, Host: `${address}:${server.port}` })).status]).toEqual([address, 200]);
      }
      expect((await get(`${url}/`, { ...bearer, Host: 'evil.example.com' })).status).toBe(421);
    } finally {
      await server.close();
    }
  });

  it('asks for the token on every route but the probes and /metrics: as a bearer token, or as the password of any user', async () => {
    const token = 'a-long-random-token';
    const server = await startObservabilityServer('127.0.0.1', 0, everyKind, { authToken: token });
    try {
      for (const path of ['/', '/api/live', '/assets/console.css', '/broken', '/no-such-path']) {
        for (const authorization of [undefined, `Bearer ${token}x`, 'Bearer a-long', 'Bearer ', `bearer${token}`, basic('me', 'wrong'), basic(token, ''), `Token ${token}`]) {
          const refused = await get(`${server.url}${path}`, authorization === undefined ? {} : { Authorization: authorization });
          expect([path, authorization, refused.status, refused.headers['www-authenticate'], refused.body]).toEqual([
            path,
            authorization,
            401,
            'Basic realm="os-audit", charset="UTF-8"',
            'this console asks for its token: as Authorization: Bearer TOKEN, or as the password of any user\n',
          ]);
        }
        for (const authorization of [`Bearer ${token}`, `bearer  ${token}`, basic('me', token), basic('', token)]) {
          expect([path, authorization, (await get(`${server.url}${path}`, { Authorization: authorization })).status]).not.toContain(401);
        }
      }
      for (const path of ['/metrics', '/healthz', '/readyz']) expect([path, (await get(`${server.url}${path}`)).status]).not.toContain(401);
      // The Host is checked first: a rebound name is not even asked to log in.
      expect((await get(`${server.url}/`, { Host: 'evil.example.com' })).status).toBe(421);
    } finally {
      await server.close();
    }
  });

  it('sends nosniff, no referrer and the console\'s CSP on every response: pages, JSON, assets, metrics, probes, 401, 404, 405, 421, 500', async () => {
    const server = await startObservabilityServer('127.0.0.1', 0, everyKind, { authToken: 't' });
    try {
      const answers = [
        ...(await Promise.all(['/', '/api/live', '/assets/console.css', '/broken', '/no-such-path', '/metrics', '/healthz', '/readyz'].map((path) => get(`${server.url}${path}`, { Authorization: 'Bearer t' })))),
        await get(`${server.url}/`),
        await get(`${server.url}/`, { Host: 'evil.example.com' }),
        await fetch(`${server.url}/healthz`, { method: 'POST' }).then((response) => ({ status: response.status, headers: Object.fromEntries(response.headers) })),
      ];
      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 500, 404, 200, 200, 503, 401, 421, 405]);
      for (const answer of answers) expect(answer.headers).toMatchObject(securityHeaders);
      expect(securityHeaders['content-security-policy']).toBe("default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'");
    } finally {
      await server.close();
    }
  });
});
