import type { JsonObject } from '../src/json/json-value.js';
import { KNOWN_EVENT_KIND_LIST } from '../src/events/session-event.js';
import { eventTurn, validateEvent } from '../src/events/validate-event.js';
import { Prng } from './prng.js';

/**
 * The benchmark's corpus: realistic session logs, generated from a seed.
 *
 * - every one of the 29 kinds of `shared/spec/session-events.md`, plus a few kinds newer SDKs
 *   write (stored, ignored by the snapshot) and the three the v0.2.60 snapshot reads. About 40%
 *   of the events are of the kinds the snapshots read. `budget_exceeded` carries the
 *   `operation_id` the v0.2.60 runtime writes, so that both built-in projections read every event;
 * - a session opens with `run_started` and (when it runs to its end) closes with `run_terminal`;
 *   turns advance; several sub-agents per session, each spawned `running` and later `joined`,
 *   `failed` or respawned; suspends are followed by resumes;
 * - every body is 300–800 bytes of JSON: free text (messages, tool output, summaries, notes)
 *   pads each event to a size drawn uniformly in that range.
 */

/** The kinds whose events change the snapshot (section 2's last column). */
export const SNAPSHOT_KINDS = [
  'suspended',
  'resumed',
  'tool_gated',
  'agent_process_changed',
  'signal_disposed',
  'budget_exceeded',
  'page_out',
  'page_in',
  'memory_written',
  'memory_queried',
  'memory_validation_failed',
  'memory_retrieval_result',
] as const;

/** The 29 kinds of the contract. */
export const CONTRACT_KINDS = KNOWN_EVENT_KIND_LIST;

/** Kinds that newer SDKs write and the contract does not name. */
export const NEWER_KINDS = ['workflow_completed', 'summary_upgraded', 'group_budget_charged'] as const;

/** Kinds the v0.2.60 runtime writes that its snapshot (`os_snapshot_v0_2_60`) reads, the contract does not name. */
export const V0_2_60_KINDS = ['signal_delivery_disposed', 'budget_usage_reported', 'operation_cancelled'] as const;

export const MIN_BODY_BYTES = 300;
export const MAX_BODY_BYTES = 800;

/** The sizes the bodies of a corpus are drawn from (UTF-8 bytes of each event's JSON). */
export interface BodyBytes {
  min: number;
  max: number;
}

/** The corpus of round one (and of every figure but the small events'): 300–800 bytes, as tool calls and messages are. */
export const FULL_BODIES: BodyBytes = { min: MIN_BODY_BYTES, max: MAX_BODY_BYTES };

/**
 * Small events, as many runtimes write them (checkpoints, page-ins): about 180 bytes. A kind
 * whose fields alone take more keeps them, so a few bodies are larger.
 */
export const SMALL_BODIES: BodyBytes = { min: 130, max: 230 };

/** One generated event, ready for the API (`event`), a JSONL file or COPY (`json`). */
export interface CorpusEvent {
  kind: string;
  /** What the store puts in the `turn` column (`eventTurn`). */
  turn: number | null;
  event: JsonObject;
  json: string;
  /** UTF-8 bytes of `json`. */
  bytes: number;
}

/** Weights (percent of the events between a session's first and last). */
const MIDDLE_WEIGHTS: ReadonlyArray<readonly [string, number]> = [
  // Kinds the snapshot ignores: 59%, plus run_started / run_terminal at the ends (~1%).
  ['llm_completed', 15],
  ['tool_requested', 12],
  ['tool_completed', 12],
  ['tool_argument_repaired', 1.5],
  ['permission_requested', 2],
  ['permission_resolved', 2],
  ['tool_denied', 1],
  ['compressed', 2],
  ['large_result_spooled', 2],
  ['capability_changed', 1.5],
  ['context_renewed', 1],
  ['checkpoint_taken', 2],
  ['rollbacked', 1],
  ['milestone_advanced', 1.5],
  ['milestone_blocked', 1],
  ['newer', 0.5],
  // Kinds the snapshots read: 40%. A v0.2.60 runtime disposes signals as signal_delivery_disposed.
  ['v0_2_60', 1.5],
  ['suspended', 3],
  ['resumed', 3],
  ['tool_gated', 5],
  ['agent_process_changed', 6],
  ['signal_disposed', 3.5],
  ['budget_exceeded', 1.5],
  ['page_out', 3],
  ['page_in', 3],
  ['memory_written', 4],
  ['memory_queried', 3.5],
  ['memory_validation_failed', 1],
  ['memory_retrieval_result', 2],
];
const MIDDLE_KINDS = MIDDLE_WEIGHTS.map(([kind]) => kind);
const MIDDLE_CUMULATIVE = MIDDLE_WEIGHTS.reduce<number[]>((acc, [, w]) => {
  acc.push((acc[acc.length - 1] ?? 0) + w);
  return acc;
}, []);

const WORDS = (
  'the report revenue quarter growth customer churn margin forecast analysis section table figure source ' +
  'summary draft review approved pending file directory module function test failed passed build deploy ' +
  'request response latency error retry timeout cache index query database schema migration column row ' +
  'agent worker planner tool call result output input context memory page budget token limit signal ' +
  'queue interrupt resume suspend user assistant system prompt goal criteria milestone phase capability ' +
  'search read write shell command argument path config option value default version release note ' +
  'we should check whether this holds before moving on; the next step is to compare it with last year ' +
  'and cite the numbers - see appendix B for the raw figures (in EUR, net of tax) ... résumé of findings'
).split(' ');

/**
 * A pool of seeded free text; events take slices of it. Its characters are all Latin-1, so V8
 * keeps it and its slices as one-byte strings, which `JSON.stringify` handles fast. `extra[i]`
 * counts what the first `i` characters add to their length once in JSON as UTF-8 (`é` is two
 * bytes, a line break `\n` two characters).
 */
class TextPool {
  private readonly text: string;
  private readonly extra: Uint32Array;
  /** Per kind, the bytes of the last event made without its text (shared by the sessions). */
  readonly baseBytes = new Map<string, number>();

  constructor(prng: Prng, size = 96 * 1024) {
    const parts: string[] = [];
    let length = 0;
    let sentence = 0;
    while (length < size) {
      const word = prng.pick(WORDS);
      const piece = sentence === 0 ? word.charAt(0).toUpperCase() + word.slice(1) : word;
      sentence += 1;
      let sep = ' ';
      if (sentence > 6 && prng.chance(0.12)) {
        sep = prng.chance(0.15) ? '.\n' : '. ';
        sentence = 0;
      } else if (prng.chance(0.05)) {
        sep = ', ';
      }
      parts.push(piece, sep);
      length += piece.length + sep.length;
    }
    this.text = parts.join('');
    this.extra = new Uint32Array(this.text.length + 1);
    for (let i = 0; i < this.text.length; i++) {
      const code = this.text.charCodeAt(i);
      if (code > 0xff) throw new Error('the text pool must be Latin-1');
      this.extra[i + 1] = this.extra[i]! + (code >= 0x80 || code === 0x0a ? 1 : 0);
    }
  }

  /** Text that takes at most `bytes` bytes in JSON (and a few less at most), from a random place. */
  take(prng: Prng, bytes: number): string {
    if (bytes <= 0) return '';
    const start = prng.int(0, this.text.length - bytes - 1);
    let end = start + bytes;
    for (;;) {
      const size = end - start + this.extra[end]! - this.extra[start]!;
      if (size <= bytes) break;
      end -= size - bytes;
    }
    return this.text.slice(start, end);
  }

  /** The bytes `text` (a slice of the pool) takes in JSON. */
  jsonBytes(text: string): number {
    let size = text.length;
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code >= 0x80 || code === 0x0a) size += 1;
    }
    return size;
  }
}

interface AgentState {
  id: string;
  role: string;
  isolation: string;
  contextInheritance: string;
  capabilities: string[];
  state: 'none' | 'running' | 'joined' | 'failed';
}

const ROLES = ['worker', 'reviewer', 'planner', 'researcher'];
const ISOLATIONS = ['shared', 'readonly', 'systemonly', 'sandboxed'];
const INHERITANCES = ['none', 'full', 'summary', 'systemonly'];
const CAPABILITIES = ['fs.read', 'fs.write', 'web.search', 'shell.exec', 'memory.read', 'memory.write'];
const DISPOSITIONS = ['ignore', 'observe', 'queue', 'run', 'interrupt', 'interrupt_now', 'dropped'];
const SUSPEND_REASONS = ['ask_user', 'sub_agent_await', 'permission', 'rate_limited'];
const BUDGETS = ['tokens', 'turns', 'wall_clock', 'tool_calls', 'cost'];
const TOOLS = ['read_file', 'search', 'shell', 'write_file', 'http_get', 'sql_query'];
const MEMORY_KINDS = ['fact', 'preference', 'episode', 'plan'];

/**
 * Writes one session's log, an event at a time, with the session's state (turn, agents,
 * suspends) carried from event to event.
 */
export class SessionScript {
  private emitted = 0;
  private turn = 0;
  private callCounter = 0;
  private signalCounter = 0;
  private memoryCounter = 0;
  private pendingSuspend: string[] | null = null;
  private readonly agents: AgentState[];

  constructor(
    private readonly prng: Prng,
    private readonly pool: TextPool,
    readonly sessionId: string,
    /** Events in the whole log; the last is `run_terminal`. */
    readonly length: number,
    private readonly bodyBytes: BodyBytes = FULL_BODIES,
  ) {
    const agentCount = prng.int(2, 5);
    this.agents = Array.from({ length: agentCount }, (_, i) => ({
      id: `agent-${i + 1}-${prng.int(1000, 9999)}`,
      role: prng.pick(ROLES),
      isolation: prng.pick(ISOLATIONS),
      contextInheritance: prng.pick(INHERITANCES),
      capabilities: CAPABILITIES.filter(() => prng.chance(0.4)),
      state: 'none' as const,
    }));
  }

  get done(): boolean {
    return this.emitted >= this.length;
  }

  next(): CorpusRow {
    const prng = this.prng;
    let kind: string;
    if (this.emitted === 0) kind = 'run_started';
    else if (this.emitted === this.length - 1 && this.length > 1) kind = 'run_terminal';
    else {
      kind = MIDDLE_KINDS[prng.weighted(MIDDLE_CUMULATIVE)]!;
      if (kind === 'resumed' && this.pendingSuspend === null) kind = 'suspended';
      else if (kind === 'suspended' && this.pendingSuspend !== null) kind = 'resumed';
      if (kind === 'newer') kind = prng.pick(NEWER_KINDS);
      else if (kind === 'v0_2_60') kind = prng.pick(V0_2_60_KINDS);
      if (prng.chance(0.15)) this.turn += 1;
    }
    const seq = this.emitted;
    this.emitted += 1;
    const build = this.builder(kind);
    // A size drawn in the range; the text is cut to fit the last size seen of this kind without
    // its text (one JSON.stringify per event, the costly part), then corrected if need be.
    const { min, max } = this.bodyBytes;
    const target = prng.int(min + 10, max - 10);
    let base = this.pool.baseBytes.get(kind);
    if (base === undefined) base = Buffer.byteLength(JSON.stringify(build('')));
    let pad = this.pool.take(prng, target - base);
    let event = build(pad);
    let json = JSON.stringify(event);
    let bytes = Buffer.byteLength(json);
    for (let attempt = 0; (bytes > max || bytes < min) && attempt < 5; attempt++) {
      pad = bytes > max
        ? pad.slice(0, Math.max(0, pad.length - (bytes - target)))
        : this.pool.take(prng, pad.length + (target - bytes));
      event = build(pad);
      json = JSON.stringify(event);
      bytes = Buffer.byteLength(json);
    }
    this.pool.baseBytes.set(kind, bytes - this.pool.jsonBytes(pad));
    return { sessionId: this.sessionId, seq, kind, turn: turnColumn(kind, event), event, json, bytes };
  }

  /** The event of `kind` at this point of the session, with `pad` as its free text. */
  private builder(kind: string): (pad: string) => JsonObject {
    const prng = this.prng;
    const turn = this.turn;
    const sessionId = this.sessionId;
    switch (kind) {
      case 'run_started': {
        const agent = this.agents[0]!.id;
        return (pad) => ({
          kind,
          run_id: `run-${sessionId}`,
          goal: pad,
          criteria: ['cites sources', 'under 300 words'],
          agent_id: agent,
          system_prompt: 'You are a careful analyst. Use the tools you are given; ask before deleting anything.',
        });
      }
      case 'llm_completed': {
        const responseId = `resp-${prng.int(100000, 999999)}`;
        return (pad) => ({
          kind,
          turn,
          message: { role: 'assistant', content: pad, tool_calls: [] },
          provider_replay: { provider: 'example', response_id: responseId },
        });
      }
      case 'tool_requested': {
        const a = this.nextCall();
        const b = this.nextCall();
        const toolA = prng.pick(TOOLS);
        const toolB = prng.pick(TOOLS);
        return (pad) => ({
          kind,
          turn,
          calls: [
            { id: a, name: toolA, arguments: { path: `docs/${a}.md` } },
            { id: b, name: toolB, arguments: JSON.stringify({ q: pad }) },
          ],
        });
      }
      case 'tool_completed': {
        const a = `c${this.callCounter}`;
        const failed = prng.chance(0.1);
        return (pad) => ({ kind, turn, results: [{ call_id: a, content: pad, is_error: failed }] });
      }
      case 'run_terminal': {
        const reason = prng.pick(['completed', 'completed', 'completed', 'max_turns', 'cancelled']);
        const tokens = prng.int(10_000, 2_000_000);
        return (pad) => ({ kind, reason, turns_used: turn, total_tokens: tokens, summary: pad });
      }
      case 'tool_argument_repaired': {
        const tool = prng.pick(TOOLS);
        return (pad) => ({
          kind,
          turn,
          tool,
          original_arguments: `{"q": ${JSON.stringify(pad.slice(0, pad.length >> 1))},}`,
          repaired_arguments: `{"q": ${JSON.stringify(pad.slice(0, pad.length >> 1))}}`,
        });
      }
      case 'permission_requested': {
        const tool = prng.pick(TOOLS);
        return (pad) => ({ kind, turn, tool, arguments: JSON.stringify({ cmd: `make clean && ${tool}` }), reason: pad });
      }
      case 'permission_resolved': {
        const approved = prng.chance(0.8);
        return (pad) => ({ kind, turn, approved, responder: 'user', note: pad });
      }
      case 'tool_denied': {
        const call = this.nextCall();
        const tool = prng.pick(TOOLS);
        return (pad) => ({ kind, turn, call_id: call, tool_name: tool, reason: pad });
      }
      case 'compressed': {
        const end = Math.max(1, this.emitted - 2);
        const tokens = prng.int(50, 900);
        return (pad) => ({
          kind,
          turn,
          archived_seq_range: [0, end],
          action: 'summarize',
          summary: pad,
          archive_ref: `archive://${sessionId}/0-${end}`,
          summary_tokens: tokens,
          preserved_refs: [`c${this.callCounter}`],
        });
      }
      case 'page_out': {
        const count = prng.int(1, 40);
        const tier = prng.pick(['cold', 'warm', 'archive']);
        return (pad) => ({ kind, turn, action: 'evict', summary: pad, tier_hint: tier, message_count: count });
      }
      case 'page_in': {
        const count = prng.int(1, 12);
        return (pad) => ({ kind, turn, entry_count: count, note: pad });
      }
      case 'large_result_spooled': {
        const call = `c${this.callCounter}`;
        const size = prng.int(100_000, 50_000_000);
        return (pad) => ({
          kind,
          turn,
          call_id: call,
          tool: 'read_file',
          original_size: size,
          preview_size: 2048,
          spool_ref: `spool://${sessionId}/${call}`,
          preview: pad,
        });
      }
      case 'capability_changed': {
        const capability = prng.pick(CAPABILITIES);
        const mount = prng.chance(0.7);
        return (pad) => ({
          kind,
          turn,
          added: mount ? [capability] : [],
          removed: mount ? [] : [capability],
          change_kind: mount ? 'mount' : 'unmount',
          capability_id: capability,
          version: '1.2.0',
          mounted_by: 'kernel',
          mount_reason: pad,
        });
      }
      case 'context_renewed': {
        const sprint = prng.int(1, 9);
        return (pad) => ({ kind, turn, sprint, handoff_ref: `handoff://${sessionId}/${sprint}`, handoff_summary: pad });
      }
      case 'suspended': {
        const reason = prng.pick(SUSPEND_REASONS);
        const pending =
          reason === 'sub_agent_await'
            ? this.agents.filter((agent) => agent.state === 'running').map((agent) => agent.id).slice(0, 3)
            : [`c${this.callCounter}`];
        this.pendingSuspend = pending;
        return (pad) => ({ kind, turn, reason, pending_calls: pending, note: pad });
      }
      case 'resumed': {
        const pending = this.pendingSuspend ?? [];
        this.pendingSuspend = null;
        const denied = pending.length > 1 && prng.chance(0.2) ? pending.slice(-1) : [];
        const approved = pending.filter((id) => !denied.includes(id));
        return (pad) => ({ kind, turn, approved, denied, note: pad });
      }
      case 'tool_gated': {
        const call = this.nextCall();
        const tool = prng.pick(TOOLS);
        const reason = prng.pick(['ask_user', 'policy', 'needs_approval']);
        return (pad) => ({ kind, turn, call_id: call, tool, reason, arguments_preview: pad });
      }
      case 'signal_disposed': {
        this.signalCounter += 1;
        const signal = `sig-${this.signalCounter}`;
        const disposition = prng.pick(DISPOSITIONS);
        const depth = prng.int(0, 8);
        return (pad) => ({ kind, turn, signal_id: signal, disposition, queue_depth: depth, payload_preview: pad });
      }
      case 'budget_exceeded': {
        const budget = prng.pick(BUDGETS);
        const operation = `op-${turn}`;
        const reservation: JsonObject = prng.chance(0.5) ? { reservation_id: `res-${turn}` } : {};
        return (pad) => ({ kind, turn, operation_id: operation, ...reservation, budget, detail: pad });
      }
      case 'signal_delivery_disposed': {
        this.signalCounter += 1;
        const signal = `sig-${this.signalCounter}`;
        const disposition = prng.pick(DISPOSITIONS);
        const [attempt, depth] = [prng.int(1, 3), prng.int(0, 8)];
        return (pad) => ({ kind, turn, operation_id: `op-${turn}`, delivery_id: `dlv-${signal}`, attempt, signal_id: signal, disposition, queue_depth: depth, payload_preview: pad });
      }
      case 'budget_usage_reported': {
        const [tokens, subagents, rounds] = [prng.int(100, 200_000), prng.int(0, 4), prng.int(1, 12)];
        return (pad) => ({ kind, turn, operation_id: `op-${turn}`, reservation_id: `res-${turn}`, tokens, subagents, rounds, detail: pad });
      }
      case 'operation_cancelled': {
        const reason = prng.pick(['user', 'deadline', 'lease_lost', 'host_shutdown']);
        const pending = [`c${this.callCounter}`];
        return (pad) => ({ kind, turn, operation_id: `op-${turn}`, reason, pending_call_ids: pending, detail: pad });
      }
      case 'checkpoint_taken': {
        const length = this.emitted;
        return (pad) => ({ kind, turn, history_len: length, label: pad });
      }
      case 'rollbacked': {
        const length = Math.max(0, this.emitted - prng.int(2, 10));
        const call = `c${this.callCounter}`;
        return (pad) => ({ kind, turn, checkpoint_history_len: length, reason: { kind: 'tool_failure', call_id: call, message: pad } });
      }
      case 'agent_process_changed': {
        const agent = prng.pick(this.agents);
        let state: AgentState['state'];
        if (agent.state === 'none') state = 'running';
        else if (agent.state === 'running') state = prng.chance(0.55) ? 'joined' : prng.chance(0.35) ? 'failed' : 'running';
        else state = prng.chance(0.4) ? 'running' : agent.state;
        agent.state = state;
        const omitState = state === 'running' && prng.chance(0.1);
        const termination = state === 'joined' ? 'completed' : state === 'failed' ? 'error' : null;
        const { id, role, isolation, contextInheritance, capabilities } = agent;
        return (pad) => {
          const event: JsonObject = {
            kind,
            turn,
            agent_id: id,
            parent_session_id: sessionId,
            role,
            isolation,
            context_inheritance: contextInheritance,
          };
          if (!omitState) event.state = state;
          event.permitted_capability_ids = capabilities;
          if (termination !== null) event.result_termination = termination;
          event.task = pad;
          return event;
        };
      }
      case 'milestone_advanced': {
        const phase = prng.pick(['draft', 'review', 'publish', 'research']);
        return (pad) => ({ kind, turn, phase_id: phase, capabilities_unlocked: ['web.search'], summary: pad });
      }
      case 'milestone_blocked': {
        const phase = prng.pick(['draft', 'review', 'publish', 'research']);
        return (pad) => ({ kind, turn, phase_id: phase, reason: pad });
      }
      case 'memory_written': {
        this.memoryCounter += 1;
        const id = `m${this.memoryCounter}`;
        const memoryKind = prng.pick(MEMORY_KINDS);
        const size = prng.int(64, 8192);
        return (pad) => ({ kind, turn, memory_id: id, memory_kind: memoryKind, size_bytes: size, content_preview: pad });
      }
      case 'memory_queried': {
        const k = prng.int(1, 10);
        const asyncResponse = prng.chance(0.2);
        return (pad) => ({ kind, turn, query_context: pad, requested_k: k, requires_async_response: asyncResponse });
      }
      case 'memory_validation_failed': {
        const id = `m${prng.int(1, Math.max(1, this.memoryCounter))}`;
        return (pad) => ({ kind, turn, memory_id: id, error: pad });
      }
      case 'memory_retrieval_result': {
        const ids = [`m${prng.int(1, Math.max(1, this.memoryCounter))}`, `m${prng.int(1, Math.max(1, this.memoryCounter))}`];
        // The Node SDK writes the two fields flat on the event: accept both (spec, section 2).
        const flat = prng.chance(0.3);
        return (pad): JsonObject =>
          flat
            ? { kind, selected_memory_ids: ids, selection_rationale: pad }
            : { kind, retrieval: { selected_memory_ids: ids, selection_rationale: pad } };
      }
      default: {
        // workflow_completed, summary_upgraded, group_budget_charged: kinds of newer SDKs.
        return (pad) => ({ kind, turn, summary: pad });
      }
    }
  }

  private nextCall(): string {
    this.callCounter += 1;
    return `c${this.callCounter}`;
  }
}

const NO_TURN = new Set(['run_started', 'run_terminal', 'memory_retrieval_result']);

/** The `turn` column the store writes (`eventTurn`): every generated event with a turn has a u32 one. */
function turnColumn(kind: string, event: JsonObject): number | null {
  if (NO_TURN.has(kind)) return null;
  const turn = event.turn;
  return typeof turn === 'number' ? turn : null;
}

/** Where to start a corpus: its seed and the prefix of its session ids. */
export interface CorpusOptions {
  seed: string;
  prefix: string;
  /** Default {@link FULL_BODIES}. */
  bodyBytes?: BodyBytes;
}

/** Makes sessions of a corpus, each from its own seeded stream. */
export class SessionFactory {
  private readonly pool: TextPool;
  private readonly lengths: Prng;
  private count = 0;

  constructor(private readonly options: CorpusOptions) {
    this.pool = new TextPool(new Prng(`${options.seed}/text`));
    this.lengths = new Prng(`${options.seed}/lengths`);
  }

  /** The length of the next session of ~200 events (150–250). */
  nextLength(): number {
    return this.lengths.int(150, 250);
  }

  /** A new session of `length` events. */
  session(length: number): SessionScript {
    const index = this.count++;
    const sessionId = `${this.options.prefix}-${String(index).padStart(6, '0')}`;
    return new SessionScript(new Prng(`${this.options.seed}/${index}`), this.pool, sessionId, length, this.options.bodyBytes);
  }
}

/** One row of `session_events` as the corpus writes it. */
export interface CorpusRow extends CorpusEvent {
  sessionId: string;
  seq: number;
}

/**
 * The catch-up corpus: `events` events of sessions of ~200 events, `active` sessions running
 * at once so that the log interleaves them as a busy runtime's log does. `lastSeqs` holds each
 * session's last seq once the rows are consumed.
 */
export class InterleavedCorpus {
  readonly lastSeqs = new Map<string, number>();

  constructor(
    private readonly options: CorpusOptions & { events: number; active?: number },
  ) {}

  *rows(): Generator<CorpusRow> {
    const factory = new SessionFactory(this.options);
    const order = new Prng(`${this.options.seed}/order`);
    const active: SessionScript[] = [];
    const capacity = this.options.active ?? 256;
    let planned = 0;
    const open = (): SessionScript | undefined => {
      if (planned >= this.options.events) return undefined;
      const length = Math.min(factory.nextLength(), this.options.events - planned);
      planned += length;
      return factory.session(length);
    };
    while (active.length < capacity) {
      const script = open();
      if (script === undefined) break;
      active.push(script);
    }
    while (active.length > 0) {
      const index = Math.floor(order.next() * active.length);
      const script = active[index]!;
      const row = script.next();
      yield row;
      if (script.done) {
        this.lastSeqs.set(script.sessionId, row.seq);
        const replacement = open();
        if (replacement === undefined) {
          active[index] = active[active.length - 1]!;
          active.pop();
        } else {
          active[index] = replacement;
        }
      }
    }
  }
}

/** What a corpus holds: kinds, sizes, and a validated sample. */
export class CorpusStats {
  events = 0;
  bytes = 0;
  minBytes = Number.POSITIVE_INFINITY;
  maxBytes = 0;
  snapshotEvents = 0;
  validated = 0;
  readonly kinds = new Map<string, number>();
  private static readonly snapshotKinds = new Set<string>(SNAPSHOT_KINDS);

  /**
   * Counts one event; every `validateEvery`-th (and each of the first 2,000) is checked with
   * `validateEvent` and `eventTurn`, the store's own validator: a failure throws.
   */
  add(event: CorpusEvent, validateEvery = 100): void {
    const bytes = event.bytes;
    this.events += 1;
    this.bytes += bytes;
    if (bytes < this.minBytes) this.minBytes = bytes;
    if (bytes > this.maxBytes) this.maxBytes = bytes;
    this.kinds.set(event.kind, (this.kinds.get(event.kind) ?? 0) + 1);
    if (CorpusStats.snapshotKinds.has(event.kind)) this.snapshotEvents += 1;
    if (this.events <= 2000 || this.events % validateEvery === 0 || (this.kinds.get(event.kind) ?? 0) <= 3) {
      checkEvent(event);
      this.validated += 1;
    }
  }

  /** Throws unless the corpus has every kind, ~40% snapshot kinds and 300–800-byte bodies. */
  assertRealistic(): void {
    const missing = CONTRACT_KINDS.filter((kind) => !this.kinds.has(kind));
    if (missing.length > 0) throw new Error(`the corpus lacks kinds ${missing.join(', ')}`);
    if (this.minBytes < MIN_BODY_BYTES || this.maxBytes > MAX_BODY_BYTES) {
      throw new Error(`the corpus has bodies of ${this.minBytes}–${this.maxBytes} bytes, not ${MIN_BODY_BYTES}–${MAX_BODY_BYTES}`);
    }
  }

  describe(): string {
    const share = this.events === 0 ? 0 : (100 * this.snapshotEvents) / this.events;
    const contract = CONTRACT_KINDS.filter((kind) => this.kinds.has(kind)).length;
    const newer = NEWER_KINDS.filter((kind) => this.kinds.has(kind)).length;
    const v0260 = V0_2_60_KINDS.filter((kind) => this.kinds.has(kind)).length;
    return (
      `${this.events.toLocaleString('en-US')} events, ${contract}/29 contract kinds + ${newer} newer kinds + ${v0260} of v0.2.60, ` +
      `${share.toFixed(1)}% of kinds the seed's snapshot reads, bodies ${this.minBytes}–${this.maxBytes} bytes ` +
      `(mean ${Math.round(this.bytes / Math.max(1, this.events))}), ${this.validated.toLocaleString('en-US')} checked with validateEvent`
    );
  }

  toJson(): Record<string, unknown> {
    return {
      events: this.events,
      bytes: this.bytes,
      minBytes: this.minBytes,
      maxBytes: this.maxBytes,
      meanBytes: Math.round(this.bytes / Math.max(1, this.events)),
      snapshotKindShare: this.events === 0 ? 0 : this.snapshotEvents / this.events,
      kinds: Object.fromEntries([...this.kinds].sort(([a], [b]) => a.localeCompare(b))),
      validated: this.validated,
    };
  }
}

/** The store's validator accepts the event, and the turn column is the one the store computes. */
export function checkEvent(event: CorpusEvent): void {
  const validated = validateEvent(event.event);
  if (validated.kind !== event.kind) throw new Error(`generated ${event.kind} validated as ${validated.kind}`);
  const turn = eventTurn(validated);
  if (turn !== event.turn) throw new Error(`generated ${event.kind} has turn column ${event.turn}, the store computes ${turn}`);
  if (JSON.stringify(event.event) !== event.json) throw new Error('generated JSON differs from the event');
  if (Buffer.byteLength(event.json) !== event.bytes) throw new Error('generated JSON has another size');
}
