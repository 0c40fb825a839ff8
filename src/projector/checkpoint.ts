/** How far a projection has read the log: a point in (transaction id, position) order. */
export interface Checkpoint {
  /** The `xid8` of the last event read, as text (it exceeds 2^53 in old clusters). */
  transactionId: string;
  position: number;
}

export const LOG_START: Checkpoint = { transactionId: '0', position: 0 };
