import { createServer, type Server, type Socket, connect } from 'node:net';

/** A TCP proxy in front of PostgreSQL that can cut a connection at a chosen moment. */
export interface CuttingProxy {
  /** `url` with its host and port replaced by the proxy's. */
  readonly url: string;
  /**
   * Cuts the next connection that sends a statement containing `text` (e.g. `COMMIT`): the
   * statement reaches the server and runs, its answer is dropped and the client's socket closed,
   * as when the network fails right after the server committed.
   */
  cutAfterAnswerTo(text: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts a proxy that forwards to the server of `url` (host and port) and hands out a URL
 * through it.
 *
 * @example
 * ```ts
 * const proxy = await startCuttingProxy(testDb.url);
 * const cut = proxy.cutAfterAnswerTo('COMMIT');
 * await expect(append(proxy.url)).resolves...; await cut;
 * ```
 */
export async function startCuttingProxy(url: string): Promise<CuttingProxy> {
  const target = new URL(url);
  const sockets = new Set<Socket>();
  let pendingCut: { text: Buffer; done: () => void } | undefined;

  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(upstream);
    let cutting: (() => void) | undefined;
    client.on('data', (chunk: Buffer) => {
      if (pendingCut !== undefined && chunk.includes(pendingCut.text)) {
        cutting = pendingCut.done;
        pendingCut = undefined;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (cutting === undefined) return void client.write(chunk);
      // The server has answered the statement: the client never hears it.
      client.destroy();
      upstream.destroy();
      cutting();
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the proxy has no port');
  const proxied = new URL(url);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(address.port);

  return {
    url: proxied.toString(),
    cutAfterAnswerTo: (text) => new Promise<void>((resolve) => (pendingCut = { text: Buffer.from(text), done: resolve })),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
