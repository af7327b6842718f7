import { ApiError, notFound } from './api-error.js';
import type { WorkHeartbeatWire, WorkState, WorkWire } from './control-plane-wire.js';

/** A queued item, as the emulator keeps it. */
export interface WorkRecord {
  id: string;
  environmentId: string;
  sessionId: string;
  /** What the poll answer carries as `secret`. */
  secret: string | null;
  state: WorkState;
  metadata: Record<string, string>;
  createdAt: string;
  /** Wall-clock ms of the last poll that handed it out; `undefined` while never polled. */
  polledAtMs: number | undefined;
  acknowledgedAt: string | null;
  startedAt: string | null;
  stopRequestedAt: string | null;
  stoppedAt: string | null;
  /** The heartbeats received, oldest first, with what each was answered. */
  heartbeats: WorkHeartbeatWire[];
  /** The lease, while one is held: its TTL and the wall-clock ms it was last renewed. */
  lease: { ttlSeconds: number; renewedAtMs: number; lastHeartbeat: string } | undefined;
  /** `true` once `expireLease` was called: the next heartbeat finds the lease gone. */
  leaseRevoked: boolean;
}

/** The default `reclaim_older_than_ms`: an item polled but not acked is handed out again after it. */
const DEFAULT_RECLAIM_MS = 5_000;
/** `block_ms` is capped at 999 by the service. */
const MAX_BLOCK_MS = 999;

/**
 * The environment work queues: items queued per environment, handed out by poll, acked,
 * kept alive by heartbeats (leases on the wall clock, as the worker's heartbeat loop measures
 * them), and stopped.
 */
export class WorkQueue {
  readonly items = new Map<string, WorkRecord>();
  readonly #waiters = new Set<() => void>();
  readonly #now: () => string;
  readonly #leaseTtlSeconds: () => number;

  constructor(now: () => string, leaseTtlSeconds: () => number) {
    this.#now = now;
    this.#leaseTtlSeconds = leaseTtlSeconds;
  }

  add(record: WorkRecord): void {
    if (this.items.has(record.id)) throw new Error(`work item ${record.id} is already queued`);
    this.items.set(record.id, record);
    this.#wake();
  }

  /**
   * The next item for `environmentId` (queued and never handed out, or handed out longer ago
   * than `reclaimMs` without an ack), waiting up to `blockMs` for one to arrive.
   */
  async poll(environmentId: string, blockMs: number, reclaimMs: number | undefined, signal: AbortSignal): Promise<WorkRecord | null> {
    const deadline = Date.now() + Math.min(Math.max(blockMs, 0), MAX_BLOCK_MS);
    for (;;) {
      const item = this.#claimable(environmentId, reclaimMs ?? DEFAULT_RECLAIM_MS);
      if (item) {
        item.polledAtMs = Date.now();
        return item;
      }
      const left = deadline - Date.now();
      if (left <= 0 || signal.aborted) return null;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.#waiters.delete(done);
          signal.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, left);
        this.#waiters.add(done);
        signal.addEventListener('abort', done, { once: true });
      });
    }
  }

  /** Wakes every blocked poll (to re-check, or because the emulator is closing). */
  wakeAll(): void {
    this.#wake();
  }

  /** The item, when it belongs to `environmentId`; else 404. */
  get(environmentId: string, workId: string): WorkRecord {
    const item = this.items.get(workId);
    if (!item || item.environmentId !== environmentId) throw notFound(`work item ${workId} not found in environment ${environmentId}`);
    return item;
  }

  ack(item: WorkRecord): void {
    if (item.state === 'queued') {
      item.state = 'starting';
      item.acknowledgedAt = this.#now();
    }
  }

  /**
   * Renews the lease. Refused (412) when `expected` is given, the item is not stopping, and it
   * is not the heartbeat on record (`NO_HEARTBEAT` before the first). Not extended once the
   * item is stopped, its lease revoked, or its lease lapsed (no heartbeat within the TTL).
   */
  heartbeat(item: WorkRecord, desiredTtlSeconds: number | undefined, expected: string | undefined): WorkHeartbeatWire {
    const stopping = item.state === 'stopping' || item.state === 'stopped';
    const onRecord = item.lease?.lastHeartbeat ?? 'NO_HEARTBEAT';
    if (expected !== undefined && !stopping && expected !== onRecord) {
      const current = this.#answer(item, false);
      throw new ApiError(412, 'invalid_request_error', `expected_last_heartbeat ${expected} does not match ${onRecord}`, {
        details: {
          error_code: 'heartbeat_precondition_failed',
          current_state: { last_heartbeat: item.lease?.lastHeartbeat ?? null, lease_extended: false, state: current.state, ttl_seconds: current.ttl_seconds },
        },
      });
    }
    const lapsed = item.lease !== undefined && Date.now() - item.lease.renewedAtMs > item.lease.ttlSeconds * 1000;
    let answer: WorkHeartbeatWire;
    if (item.state === 'stopped' || item.leaseRevoked || lapsed) {
      answer = this.#answer(item, false);
    } else {
      const ttlSeconds = desiredTtlSeconds !== undefined && desiredTtlSeconds > 0 ? desiredTtlSeconds : this.#leaseTtlSeconds();
      const at = this.#now();
      item.lease = { ttlSeconds, renewedAtMs: Date.now(), lastHeartbeat: at };
      if (item.state === 'starting' || item.state === 'queued') {
        item.state = 'active';
        item.startedAt ??= at;
      }
      answer = this.#answer(item, true);
    }
    item.heartbeats.push(answer);
    return answer;
  }

  /** The next heartbeats find the item stopping: the worker is asked to wind down. */
  requestStop(item: WorkRecord): void {
    if (item.state === 'stopped') return;
    item.state = 'stopping';
    item.stopRequestedAt ??= this.#now();
  }

  stop(item: WorkRecord): void {
    if (item.state === 'stopped') return;
    const at = this.#now();
    item.state = 'stopped';
    item.stopRequestedAt ??= at;
    item.stoppedAt = at;
    item.lease = undefined;
  }

  /** The item as the API returns it; `withSecret` only on the poll answer. */
  wire(item: WorkRecord, withSecret = false): WorkWire {
    return {
      type: 'work',
      id: item.id,
      environment_id: item.environmentId,
      data: { type: 'session', id: item.sessionId },
      secret: withSecret ? item.secret : null,
      state: item.state,
      metadata: { ...item.metadata },
      created_at: item.createdAt,
      acknowledged_at: item.acknowledgedAt,
      started_at: item.startedAt,
      latest_heartbeat_at: item.lease?.lastHeartbeat ?? item.heartbeats.at(-1)?.last_heartbeat ?? null,
      stop_requested_at: item.stopRequestedAt,
      stopped_at: item.stoppedAt,
    };
  }

  #answer(item: WorkRecord, extended: boolean): WorkHeartbeatWire {
    return {
      type: 'work_heartbeat',
      last_heartbeat: item.lease?.lastHeartbeat ?? '',
      lease_extended: extended,
      state: item.state,
      ttl_seconds: item.lease?.ttlSeconds ?? this.#leaseTtlSeconds(),
    };
  }

  #claimable(environmentId: string, reclaimMs: number): WorkRecord | undefined {
    const now = Date.now();
    for (const item of this.items.values()) {
      if (item.environmentId !== environmentId || item.state !== 'queued') continue;
      if (item.polledAtMs === undefined || now - item.polledAtMs >= reclaimMs) return item;
    }
    return undefined;
  }

  #wake(): void {
    for (const wake of [...this.#waiters]) wake();
  }
}
