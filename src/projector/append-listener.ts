import pg from 'pg';

/** The channel appends notify on commit (see migrations/0001-event-store.ts). */
export const APPENDED_CHANNEL = 'os_audit_events_appended';

/**
 * Wakes the projector when events are appended: `LISTEN` on a connection of its own,
 * reconnected with backoff when it drops. Notifications sent while it was down are lost, so
 * {@link wait} also returns after a timeout (the polling fallback), and right after a reconnect.
 */
export class AppendListener {
  /** The connection listening, or being connected: one at a time, the one `close` ends. */
  private client: pg.Client | undefined;
  private pending = false;
  private waiter: (() => void) | undefined;
  private closed = false;
  private reconnectDelayMs = 200;

  constructor(
    private readonly connectionString: string,
    private readonly onProblem: (error: Error) => void = () => {},
  ) {}

  /** Connects and listens; failures are retried in the background. */
  start(): void {
    void this.connect();
  }

  /** Resolves when an append was notified since the last call, or after `timeoutMs`. */
  wait(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (this.pending || signal?.aborted) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.waiter = undefined;
        this.pending = false;
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      signal?.addEventListener('abort', done, { once: true });
      this.waiter = done;
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.waiter?.();
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }

  private wake(): void {
    this.pending = true;
    this.waiter?.();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString: this.connectionString, application_name: 'os-audit-listener' });
    this.client = client;
    client.on('notification', () => this.wake());
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client, new Error('listener connection ended')));
    try {
      await client.connect();
      await client.query(`LISTEN ${APPENDED_CHANNEL}`);
      if (this.closed || this.client !== client) {
        await client.end();
        return;
      }
      this.reconnectDelayMs = 200;
      this.wake(); // anything appended while not listening
    } catch (error) {
      this.lost(client, error as Error);
    }
  }

  /**
   * The connection `client` is lost: it is ended and one reconnect is scheduled. Said more than
   * once of a client (an error, then its end; a failed connect), or of one no longer current,
   * it changes nothing: a second reconnect would leave a connection nobody ends.
   */
  private lost(client: pg.Client, error: Error): void {
    if (this.closed || this.client !== client) return;
    this.client = undefined;
    this.onProblem(error);
    client.removeAllListeners();
    client.on('error', () => {});
    void client.end().catch(() => {});
    const delay = this.reconnectDelayMs;
    this.reconnectDelayMs = Math.min(delay * 2, 10_000);
    setTimeout(() => void this.connect(), delay).unref();
  }
}
