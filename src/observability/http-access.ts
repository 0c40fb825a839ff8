import { createHash, timingSafeEqual } from 'node:crypto';
import { networkInterfaces } from 'node:os';

/** Who the server answers: the Host names it serves beyond loopback's, and the token its console asks for. */
export interface HttpAccess {
  /** Host names (or `name:port`) served beside `localhost`, `127.0.0.1`, `[::1]` and the bound address. */
  allowedHosts?: readonly string[];
  /** Asked for on every route but the probes and `/metrics`: as `Authorization: Bearer`, or as a basic auth password. */
  authToken?: string;
}

/**
 * Answered to any Host and without the token: a kubelet probes with the pod's IP as Host, and a
 * failed liveness probe kills the daemon. They show a status and the owner's name, no event.
 */
export const PROBE_PATHS: readonly string[] = ['/healthz', '/readyz'];

/** Host-checked but answered without the token: Prometheus often scrapes without one, and metrics hold counters, no event. */
export const TOKENLESS_PATHS: readonly string[] = [...PROBE_PATHS, '/metrics'];

/** The response headers of every route: no sniffing, no referrer, nothing loaded from elsewhere, no framing. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '::1'];

/**
 * Whether `host` (an address to listen on) is reachable from this machine only.
 *
 * @example
 * ```ts
 * isLoopbackAddress('127.0.0.1'); // true
 * isLoopbackAddress('0.0.0.0'); // false
 * ```
 */
export function isLoopbackAddress(host: string): boolean {
  const name = hostName(host);
  return name === 'localhost' || name === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}

/**
 * The Host names a server bound to `boundAddress` serves: loopback's, the bound address (and
 * each interface's address when it is 0.0.0.0 or ::, the pod IP among them) and `allowedHosts`.
 *
 * @example
 * ```ts
 * const served = servedHosts('10.0.0.5', ['console.example.com']);
 * isServedHost(served, 'console.example.com:9464'); // true
 * isServedHost(served, 'evil.example.com'); // false
 * ```
 */
export function servedHosts(boundAddress: string, allowedHosts: readonly string[] = []): ReadonlySet<string> {
  const wildcard = boundAddress === '0.0.0.0' || boundAddress === '::';
  // The URL the server prints names the bound address, 0.0.0.0 too.
  const bound = [boundAddress, ...(wildcard ? Object.values(networkInterfaces()).flat() : []).map((each) => each?.address)];
  return new Set([...LOOPBACK_NAMES, ...bound, ...allowedHosts].filter((each) => each !== undefined).map((each) => normalHost(each)));
}

/** Whether a request's Host header names this server: its name, or its whole `name:port`, is served. */
export function isServedHost(served: ReadonlySet<string>, header: string | undefined): boolean {
  if (header === undefined || header === '') return false;
  return served.has(hostName(header)) || served.has(normalHost(header));
}

/**
 * Whether an `Authorization` header carries `token`: `Bearer TOKEN`, or basic auth with any user
 * and TOKEN as the password (so that a browser can log in). Compared in constant time.
 *
 * @example
 * ```ts
 * carriesToken('Bearer s3cret', 's3cret'); // true
 * carriesToken(`Basic ${Buffer.from('me:s3cret').toString('base64')}`, 's3cret'); // true
 * ```
 */
export function carriesToken(header: string | undefined, token: string): boolean {
  const [scheme, value = ''] = header?.trim().split(/\s+/, 2) ?? [];
  let given: string | undefined;
  if (scheme?.toLowerCase() === 'bearer') given = value;
  if (scheme?.toLowerCase() === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    given = colon === -1 ? undefined : decoded.slice(colon + 1);
  }
  // Digests of equal length: the comparison's time says nothing about the token's length or prefix.
  return given !== undefined && timingSafeEqual(digest(given), digest(token));
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** A Host header or address without its port and brackets, in lower case. */
function hostName(host: string): string {
  const lower = host.trim().toLowerCase();
  if (lower.startsWith('[')) return lower.slice(1, lower.indexOf(']') === -1 ? undefined : lower.indexOf(']'));
  // Two colons or more: an IPv6 address without brackets, so without a port.
  return lower.indexOf(':') === lower.lastIndexOf(':') ? lower.replace(/:\d*$/, '') : lower;
}

/** A host as given (with its port, if any), its IPv6 address without brackets, in lower case. */
function normalHost(host: string): string {
  const lower = host.trim().toLowerCase().replace(/\.$/, '');
  const bracketed = /^\[([^\]]*)\](.*)$/.exec(lower);
  return bracketed ? `${bracketed[1]}${bracketed[2]}` : lower;
}
