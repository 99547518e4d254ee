/**
 * A clean stop of a run (task/README.md, "Stopping"): SIGTERM or the run deadline; no new work, requests in flight
 * finish or are abandoned, the run records where it is. The grace period's end, or a second signal, exits at once.
 */
import { UserError } from "../core/errors";

/** The run stopped before its end: the next run resumes the transaction. `reason` is what the run history records. */
export class RunStopped extends UserError {
  /** `more`: lines after the first two (what the next run sends again). */
  constructor(
    readonly reason: string,
    more: string[] = [],
  ) {
    super([`run stopped: ${reason}`, "the next run resumes the transaction", ...more]);
    this.name = "RunStopped";
  }
}

export interface RunStopOptions {
  /** From the request to the exit at the latest. */
  graceMs: number;
  /** Called once, when the stop is requested (the run logs it). */
  onRequest?: (reason: string) => void;
  /** Called when the grace period ends before the run did: log the last line and exit. */
  onGraceEnd?: (reason: string) => void;
}

export class RunStop {
  /** Why the run stops; undefined while it runs. */
  reason?: string;
  private requestedAt?: number;
  private readonly abandoning = new AbortController();
  /** Backoffs in progress: a stop ends them (a set, not listeners on a signal: hundreds may wait at once). */
  private readonly waiters = new Set<{ timer: NodeJS.Timeout; reject: (err: unknown) => void }>();
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(private readonly options: RunStopOptions = { graceMs: Infinity }) {}

  get requested(): boolean {
    return this.reason !== undefined;
  }

  /** Aborted when the requests in flight are to be given up. */
  get abandonSignal(): AbortSignal {
    return this.abandoning.signal;
  }

  /** The first request wins: the run takes no new work; the grace period starts. */
  request(reason: string): void {
    if (this.requested) return;
    this.reason = reason;
    this.requestedAt = Date.now();
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.reject(this.error());
    }
    this.waiters.clear();
    const { graceMs, onRequest, onGraceEnd } = this.options;
    onRequest?.(reason);
    if (!Number.isFinite(graceMs)) return;
    this.timers.push(unrefTimer(() => this.abandoning.abort(this.error()), (graceMs * 2) / 3));
    if (onGraceEnd) this.timers.push(unrefTimer(() => onGraceEnd(reason), graceMs));
  }

  /** When the grace period ends (ms): of the stop requested, or of one requested now. */
  graceEnd(): number {
    return (this.requestedAt ?? Date.now()) + this.options.graceMs;
  }

  /**
   * Until when a stopping run writes what the hub acknowledged (ms): five sixths of the grace period, which leaves the
   * last sixth to its Stopped row.
   */
  recordBy(): number {
    const { graceMs } = this.options;
    return this.graceEnd() - (Number.isFinite(graceMs) ? graceMs / 6 : 0);
  }

  /** Stops the run at `seconds` from now (the run deadline). */
  deadline(seconds: number): void {
    if (Number.isFinite(seconds))
      this.timers.push(unrefTimer(() => this.request(`run deadline of ${seconds} s passed`), seconds * 1000));
  }

  /** Throws RunStopped once a stop was requested: call it before taking new work. */
  throwIfStopping(): void {
    if (this.requested) throw this.error();
  }

  /** A wait (a backoff) that a stop cuts short with RunStopped. */
  sleep(ms: number): Promise<void> {
    this.throwIfStopping();
    if (ms <= 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter = { timer: setTimeout(() => (this.waiters.delete(waiter), resolve()), ms), reject };
      this.waiters.add(waiter);
    });
  }

  error(): RunStopped {
    return new RunStopped(this.reason ?? "stopped");
  }

  /** The run is over: no timer is left to fire. */
  dispose(): void {
    for (const t of this.timers.splice(0)) clearTimeout(t);
  }
}

/** A stop that never comes: for the probe and for clients used outside a run. */
export const NEVER_STOPPED = new RunStop();

/**
 * SIGTERM and SIGINT request a stop; a second one calls `onSecond` (exit at once). Returns the function that removes
 * the handlers.
 */
export function stopOnSignals(stop: RunStop, onSecond: (signal: NodeJS.Signals) => void): () => void {
  const handler = (signal: NodeJS.Signals) => (stop.requested ? onSecond(signal) : stop.request(signal));
  process.on("SIGTERM", handler);
  process.on("SIGINT", handler);
  return () => {
    process.off("SIGTERM", handler);
    process.off("SIGINT", handler);
  };
}

function unrefTimer(fn: () => void, ms: number): NodeJS.Timeout {
  const t = setTimeout(fn, Math.max(0, ms));
  t.unref();
  return t;
}
