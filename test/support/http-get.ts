import { request } from 'node:http';

export interface HttpAnswer {
  status: number;
  /** Names in lower case, as node:http reads them. */
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * A GET with the headers given, Host among them (which fetch does not let one set).
 *
 * @example
 * ```ts
 * const { status } = await httpGet(`${url}/`, { Host: 'evil.example.com' }); // 421
 * ```
 */
export function httpGet(url: string, headers: Record<string, string> = {}): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const sent = request(url, { headers }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body }));
    });
    sent.on('error', reject);
    sent.end();
  });
}

/** An `Authorization` header of HTTP basic auth. */
export function basicAuth(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}
