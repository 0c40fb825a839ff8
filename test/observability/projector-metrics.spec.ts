import { describe, expect, it } from 'vitest';
import { ProjectorMetrics } from '../../src/observability/projector-metrics.js';
import type { ProjectionStatus } from '../../src/projector/projection-status.js';
import type { ProjectorEvent } from '../../src/projector/projector.js';
import { parseSamples, sampleValue } from './prometheus-samples.js';

const projection = { projection: 'os_snapshot' };
const checkpoint = { transactionId: '812', position: 40 };

function batch(eventsApplied: number, durationMs: number, skipped = 0): ProjectorEvent {
  return {
    type: 'batch',
    result: { windowCount: eventsApplied + skipped, eventsApplied, skipped, stoppedCount: 0, stopped: [], resumedCount: 0, checkpoint },
    durationMs,
  };
}

function status(events: number, seconds: number, skippedEvents: number, blockedSessions = 0): ProjectionStatus {
  return {
    projection: 'os_snapshot',
    version: 1,
    distributed: false,
  checkpoint: { ...checkpoint, updatedAt: new Date(), eventsApplied: 0 },
    behind: { events, seconds },
    leader: null,
    lastError: null,
    skippedEvents,
    blockedSessions,
    blocked: [],
    horizonHeldBy: null,
    halted: null,
  };
}

describe('ProjectorMetrics', () => {
  it('shows its counts at 0 from the start, the lag only once read, in a registry of its own', async () => {
    const text = await new ProjectorMetrics({ projections: ['os_snapshot'], owner: 'host:1:abc' }).render();
    for (const name of ['os_audit_events_projected_total', 'os_audit_batches_total', 'os_audit_batch_failures_total', 'os_audit_poison_events_total', 'os_audit_sessions_stopped_total', 'os_audit_leader']) {
      expect(sampleValue(text, name, projection)).toBe(0);
    }
    const names = new Set(parseSamples(text).map((sample) => sample.name));
    expect(['os_audit_lag_events', 'os_audit_lag_seconds', 'os_audit_projection_errors', 'os_audit_blocked_sessions'].filter((name) => names.has(name))).toEqual([]);
    expect(sampleValue(text, 'os_audit_batch_duration_seconds_count', projection)).toBe(0);
    expect(sampleValue(text, 'os_audit_projector_info', { owner: 'host:1:abc', projection: 'os_snapshot' })).toBe(1);
    expect(text).toMatch(/^# TYPE os_audit_events_projected_total counter$/m);
    expect(text).toMatch(/^# TYPE os_audit_batch_duration_seconds histogram$/m);
    expect(text).toMatch(/^# TYPE os_audit_lag_events gauge$/m);
    expect(parseSamples(text).some((sample) => sample.name === 'process_resident_memory_bytes')).toBe(true);
    // Two daemons' metrics in one process (tests) do not mix.
    const other = new ProjectorMetrics({ projections: ['os_snapshot'], owner: 'other' });
    other.record('os_snapshot', batch(5, 1));
    expect(sampleValue(await new ProjectorMetrics({ projections: ['os_snapshot'], owner: 'third' }).render(), 'os_audit_events_projected_total', projection)).toBe(0);
  });

  it('counts batches, events, poison events set aside, and their durations in buckets from 1 ms to 10 s', async () => {
    const metrics = new ProjectorMetrics({ projections: ['os_snapshot'], owner: 'o' });
    metrics.record('os_snapshot', batch(1000, 0.4));
    metrics.record('os_snapshot', batch(20_000, 180));
    metrics.record('os_snapshot', batch(7, 12_000, 2));
    const text = await metrics.render();
    expect(sampleValue(text, 'os_audit_events_projected_total', projection)).toBe(21_007);
    expect(sampleValue(text, 'os_audit_batches_total', projection)).toBe(3);
    expect(sampleValue(text, 'os_audit_poison_events_total', projection)).toBe(2);
    expect(sampleValue(text, 'os_audit_batch_duration_seconds_count', projection)).toBeCloseTo(3);
    expect(sampleValue(text, 'os_audit_batch_duration_seconds_sum', projection)).toBeCloseTo(12.1804);
    const bucket = (le: string) => sampleValue(text, 'os_audit_batch_duration_seconds_bucket', { ...projection, le });
    expect([bucket('0.001'), bucket('0.25'), bucket('10'), bucket('+Inf')]).toEqual([1, 2, 2, 3]);
  });

  it('follows the lease, counts stopped sessions, and sets the lag and the blocked sessions from status reads', async () => {
    const metrics = new ProjectorMetrics({ projections: ['os_snapshot'], owner: 'o' });
    const value = async (name: string) => sampleValue(await metrics.render(), name, projection);
    metrics.record('os_snapshot', { type: 'leader', owner: 'o', epoch: 3 });
    expect(await value('os_audit_leader')).toBe(1);
    metrics.record('os_snapshot', { type: 'sessions_stopped', sessions: [], count: 4 });
    expect([await value('os_audit_sessions_stopped_total'), await value('os_audit_leader')]).toEqual([4, 1]);
    metrics.record('os_snapshot', { type: 'standby', owner: 'o', reason: 'lease lost' });
    expect(await value('os_audit_leader')).toBe(0);

    metrics.recordStatus(status(1234, 2.5, 3, 7));
    expect([await value('os_audit_lag_events'), await value('os_audit_lag_seconds'), await value('os_audit_projection_errors')]).toEqual([1234, 2.5, 3]);
    expect(await value('os_audit_blocked_sessions')).toBe(7);
    metrics.recordStatus(status(0, 0, 3));
    expect([await value('os_audit_lag_events'), await value('os_audit_lag_seconds')]).toEqual([0, 0]);
  });

  it('counts failed batches, retried after a delay, but not the append listener reconnecting', async () => {
    const metrics = new ProjectorMetrics({ projections: ['os_snapshot'], owner: 'o' });
    const failures = async () => sampleValue(await metrics.render(), 'os_audit_batch_failures_total', projection);
    metrics.record('os_snapshot', { type: 'retry', error: new Error('relation "os_sessions" does not exist'), delayMs: 500 });
    metrics.record('os_snapshot', { type: 'retry', error: new Error('Connection terminated unexpectedly'), delayMs: 1000 });
    expect(await failures()).toBe(2);
    metrics.record('os_snapshot', { type: 'retry', error: new Error('listener: connection lost'), delayMs: 0 });
    metrics.record('os_snapshot', batch(3, 1));
    expect(await failures()).toBe(2);
    expect(await metrics.render()).toMatch(/^# TYPE os_audit_batch_failures_total counter$/m);
  });

  it("keeps each projection's series apart in one daemon's registry", async () => {
    const metrics = new ProjectorMetrics({ projections: ['os_snapshot', 'tool_calls'], owner: 'o' });
    metrics.record('tool_calls', batch(12, 3));
    metrics.record('os_snapshot', { type: 'leader', owner: 'o', epoch: 1 });
    metrics.recordStatus({ ...status(5, 1, 0), projection: 'tool_calls' });
    const text = await metrics.render();
    expect(sampleValue(text, 'os_audit_events_projected_total', { projection: 'tool_calls' })).toBe(12);
    expect(sampleValue(text, 'os_audit_events_projected_total', projection)).toBe(0);
    expect([sampleValue(text, 'os_audit_leader', projection), sampleValue(text, 'os_audit_leader', { projection: 'tool_calls' })]).toEqual([1, 0]);
    expect(sampleValue(text, 'os_audit_lag_events', { projection: 'tool_calls' })).toBe(5);
    expect(sampleValue(text, 'os_audit_projector_info', { owner: 'o', projection: 'tool_calls' })).toBe(1);
    expect(sampleValue(text, 'os_audit_projector_info', { owner: 'o', projection: 'os_snapshot' })).toBe(1);
  });
});
