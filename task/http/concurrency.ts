/**
 * Adaptive concurrency of one link (an API in a hub region): AIMD on a window of requests in flight, with slow start,
 * 429 and Vegas-style latency cuts once per round trip, pacing, a pause at the floor (task/README.md, "Adaptive
 * concurrency"); 5xx and network errors are the retries' business. The controller is pure; `Link` adds the waiting.
 */
export interface LinkLimits {
  /** Fewest requests in flight the window may shrink to (at least 1). */
  floor: number;
  /** Most requests in flight. */
  ceiling: number;
}

export interface Tuning {
  /** Window at the start (bounded by floor and ceiling). */
  initial: number;
  /** Multiplicative decrease on congestion. */
  decrease: number;
  /** Multiplicative decrease on the first congestion, which ends slow start (it overshot by up to a factor 2). */
  slowStartDecrease: number;
  /** Additive increase per round trip of successes, in congestion avoidance after a 429. */
  increase: number;
  /** The same after a cut for rising latency. */
  latencyIncrease: number;
  /** Latency is rising when the smoothed round trip exceeds baseline × tolerance + slack. */
  latencyTolerance: number;
  latencySlackMs: number;
  /** The baseline is the lowest round trip of the last two windows of this many samples. */
  baselineSamples: number;
  /** Requests in flight may exceed the window by this factor (pacing keeps the average at the window). */
  headroom: number;
  /** Pacing allows a burst of this fraction of the window (at least one request). */
  burst: number;
  /** Pause at the floor without Retry-After: the first, and the most (doubling in between). */
  pauseMinMs: number;
  pauseMaxMs: number;
}

export const DEFAULT_TUNING: Tuning = {
  initial: 4,
  decrease: 0.9,
  slowStartDecrease: 0.5,
  // Each climb back to a rate limit ends in a few 429s; the slower the climb, the rarer they are, while the average
  // window (set by `decrease`) stays. Against a 2,000 messages/s limit with Retry-After, 1.6 to 2.2 % of requests met
  // it at 0.05, and 1.2 to 1.6 % at 0.025 (`npm run bench`, 200k employees).
  increase: 0.025,
  latencyIncrease: 1,
  latencyTolerance: 2,
  latencySlackMs: 50,
  baselineSamples: 200,
  headroom: 1.25,
  burst: 0.25,
  pauseMinMs: 100,
  pauseMaxMs: 5000,
};

/** What became of one request, as the sender saw it. */
export type Outcome =
  | { kind: "ok" }
  /** 429; retryAfterMs when the hub said how long to wait. */
  | { kind: "throttled"; retryAfterMs?: number }
  /** 5xx, a network error, or an answer that says nothing about the link's load. */
  | { kind: "error" }
  /** Not sent after all (its link's breaker opened while it waited for its permit): as if never started. */
  | { kind: "unsent" };

/** A started request. */
export interface Ticket {
  readonly seq: number;
  readonly startedAt: number;
  /** The window was in use when it started: only then does its success grow the window. */
  readonly busy: boolean;
}

export interface LinkStats {
  requests: number;
  ok: number;
  throttled: number;
  errors: number;
  /** Window: now, lowest and highest reached. */
  window: { now: number; min: number; max: number };
  /** Cuts of the window, by cause. */
  cuts: { throttled: number; latency: number };
  /** Time the link was paused by 429s at the floor. */
  pausedMs: number;
  /** Round trips of all requests, ms. */
  rttMs: { p50: number; p99: number; max: number };
}

export class ConcurrencyController {
  readonly floor: number;
  readonly ceiling: number;
  private readonly tuning: Tuning;
  private window: number;
  private slowStart = true;
  /** What caused the last cut: it sets the pace of the growth after it. */
  private lastCut: "throttled" | "latency" = "throttled";
  private flying = 0;
  private nextSeq = 0;
  /** Requests started before this seq were sent before the last cut. */
  private cutSeq = 0;
  private srtt?: number;
  private baseline = { current: Infinity, previous: Infinity, samples: 0 };
  /** Pacing (GCRA): the theoretical time of the next start. */
  private tat = -Infinity;
  private pausedUntil = -Infinity;
  private pauseMs = 0;
  private readonly stats = {
    requests: 0,
    ok: 0,
    throttled: 0,
    errors: 0,
    window: { min: Infinity, max: 0 },
    cuts: { throttled: 0, latency: 0 },
    pausedMs: 0,
  };
  readonly rtt = new LatencyHistogram();

  constructor(
    limits: LinkLimits,
    private readonly now: () => number = () => performance.now(),
    tuning: Partial<Tuning> = {},
  ) {
    if (!(Number.isInteger(limits.floor) && limits.floor >= 1))
      throw new RangeError(`floor must be an integer of at least 1, got ${limits.floor}`);
    if (!(Number.isInteger(limits.ceiling) && limits.ceiling >= limits.floor))
      throw new RangeError(`ceiling must be an integer of at least the floor (${limits.floor}), got ${limits.ceiling}`);
    this.floor = limits.floor;
    this.ceiling = limits.ceiling;
    this.tuning = { ...DEFAULT_TUNING, ...tuning };
    this.window = clamp(this.tuning.initial, this.floor, this.ceiling);
    this.note();
  }

  /** The window: the average number of requests in flight aimed at. */
  get limit(): number {
    return this.window;
  }

  get inFlight(): number {
    return this.flying;
  }

  /** Most requests in flight at once right now. */
  get maxInFlight(): number {
    return Math.min(this.ceiling, Math.max(this.floor, Math.ceil(this.window * this.tuning.headroom)));
  }

  /** Milliseconds until a request may start: 0 now, Infinity until a request in flight finishes. */
  delayMs(): number {
    const now = this.now();
    if (now < this.pausedUntil) return this.pausedUntil - now;
    if (this.flying >= this.maxInFlight) return Infinity;
    if (this.srtt === undefined) return 0;
    // GCRA: a burst of B starts may leave back to back, then one per interval.
    const interval = this.srtt / this.window;
    const tolerance = interval * (Math.max(1, this.window * this.tuning.burst) - 1);
    return Math.max(0, this.tat - tolerance - now);
  }

  /** Records a start; call only when delayMs() is 0. */
  start(): Ticket {
    const now = this.now();
    const busy = this.flying + 1 >= this.window / 2;
    this.flying++;
    this.stats.requests++;
    if (this.srtt !== undefined) this.tat = Math.max(this.tat, now) + this.srtt / this.window;
    return { seq: this.nextSeq++, startedAt: now, busy };
  }

  /** Records how a started request ended, and adapts the window. */
  finish(ticket: Ticket, outcome: Outcome): void {
    const now = this.now();
    const rtt = Math.max(0, now - ticket.startedAt);
    this.flying = Math.max(0, this.flying - 1);
    if (outcome.kind === "unsent") {
      this.stats.requests--;
      return;
    }
    this.rtt.add(rtt);
    if (outcome.kind === "error") {
      this.stats.errors++;
      return;
    }
    // A 429 is answered at once, so its round trip is the link's, not the hub's work: it counts for the latency too.
    this.sample(rtt);
    const fresh = ticket.seq >= this.cutSeq;
    if (outcome.kind === "throttled") {
      this.stats.throttled++;
      if (fresh && this.window > this.floor) this.cut("throttled");
      // At the floor the window cannot slow the link down any more: the pause does.
      if (this.window <= this.floor) this.pause(now, outcome.retryAfterMs);
      return;
    }
    this.stats.ok++;
    this.pauseMs = 0;
    if (fresh && this.latencyRising()) return this.cut("latency");
    if (!ticket.busy || this.window >= this.ceiling) return;
    const increase = this.lastCut === "throttled" ? this.tuning.increase : this.tuning.latencyIncrease;
    this.window = Math.min(this.ceiling, this.window + (this.slowStart ? 1 : increase / this.window));
    this.note();
  }

  /** Counts, window and round trips so far. */
  snapshot(): LinkStats {
    const { window, cuts, pausedMs, ...counts } = this.stats;
    return {
      ...counts,
      window: { now: round(this.window), min: round(window.min), max: round(window.max) },
      cuts: { ...cuts },
      pausedMs: Math.round(pausedMs),
      rttMs: { p50: round(this.rtt.quantile(0.5)), p99: round(this.rtt.quantile(0.99)), max: round(this.rtt.max) },
    };
  }

  private cut(cause: "throttled" | "latency"): void {
    this.lastCut = cause;
    this.stats.cuts[cause]++;
    const factor = this.slowStart ? this.tuning.slowStartDecrease : this.tuning.decrease;
    this.slowStart = false;
    this.window = Math.max(this.floor, this.window * factor);
    this.cutSeq = this.nextSeq;
    this.note();
  }

  private pause(now: number, retryAfterMs: number | undefined): void {
    let ms: number;
    if (retryAfterMs !== undefined) ms = retryAfterMs;
    else {
      this.pauseMs = this.pauseMs ? Math.min(this.tuning.pauseMaxMs, this.pauseMs * 2) : this.tuning.pauseMinMs;
      ms = this.pauseMs;
    }
    const until = now + ms;
    if (until <= this.pausedUntil) return;
    this.stats.pausedMs += until - Math.max(now, this.pausedUntil);
    this.pausedUntil = until;
    this.slowStart = false;
  }

  private sample(rtt: number): void {
    this.srtt = this.srtt === undefined ? rtt : this.srtt + (rtt - this.srtt) / 8;
    const b = this.baseline;
    b.current = Math.min(b.current, rtt);
    if (++b.samples >= this.tuning.baselineSamples) {
      b.previous = b.current;
      b.current = Infinity;
      b.samples = 0;
    }
  }

  private latencyRising(): boolean {
    const base = Math.min(this.baseline.current, this.baseline.previous);
    return (
      this.srtt !== undefined &&
      Number.isFinite(base) &&
      this.srtt > base * this.tuning.latencyTolerance + this.tuning.latencySlackMs
    );
  }

  private note(): void {
    const w = this.stats.window;
    w.min = Math.min(w.min, this.window);
    w.max = Math.max(w.max, this.window);
  }
}

/** Round trips in log-spaced buckets (about 4.5% wide): bounded memory for any number of requests. */
export class LatencyHistogram {
  private static readonly GROWTH = 1.045;
  private static readonly MIN_MS = 0.05;
  private readonly counts = new Map<number, number>();
  private total = 0;
  max = 0;

  add(ms: number): void {
    const i =
      ms <= LatencyHistogram.MIN_MS
        ? 0
        : Math.ceil(Math.log(ms / LatencyHistogram.MIN_MS) / Math.log(LatencyHistogram.GROWTH));
    this.counts.set(i, (this.counts.get(i) ?? 0) + 1);
    this.total++;
    this.max = Math.max(this.max, ms);
  }

  get count(): number {
    return this.total;
  }

  /** The upper bound of the bucket holding quantile q (0 without samples). */
  quantile(q: number): number {
    if (this.total === 0) return 0;
    const rank = Math.max(1, Math.ceil(q * this.total));
    let seen = 0;
    for (const i of [...this.counts.keys()].sort((a, b) => a - b)) {
      seen += this.counts.get(i)!;
      if (seen >= rank) return Math.min(this.max, LatencyHistogram.MIN_MS * LatencyHistogram.GROWTH ** i);
    }
    return this.max;
  }
}

/**
 * The outcome an HTTP answer means for the link: 429 is congestion (with its Retry-After), 5xx says nothing about our
 * pace, any other answer came back normally.
 */
export function outcomeOf(status: number, retryAfterMs?: number): Outcome {
  if (status === 429) return retryAfterMs === undefined ? { kind: "throttled" } : { kind: "throttled", retryAfterMs };
  return status >= 500 ? { kind: "error" } : { kind: "ok" };
}

/** What a sender holds while its request is in flight. */
export interface Permit {
  /** Call once, when the answer (or the error) is in. */
  done(outcome: Outcome): void;
}

/** The seam between the senders and the controller: one HTTP request = acquire, send, done. */
export interface RequestGate {
  acquire(): Promise<Permit>;
}

/** No limit: for calls that are not part of the bulk traffic (authorize, the intake job report). */
export const UNLIMITED: RequestGate = { acquire: async () => ({ done() {} }) };

/**
 * A link: the controller plus the waiting. Waiters are served in order; they are woken when a request finishes, and
 * by a timer when pacing or a pause holds them back.
 */
export class Link implements RequestGate {
  readonly controller: ConcurrencyController;
  private readonly waiters: (() => void)[] = [];
  private timer?: NodeJS.Timeout;

  constructor(
    readonly name: string,
    limits: LinkLimits,
    tuning: Partial<Tuning> = {},
  ) {
    this.controller = new ConcurrencyController(limits, undefined, tuning);
  }

  /** Resolves when a request may start (in order of asking). */
  acquire(): Promise<Permit> {
    if (this.waiters.length === 0 && this.controller.delayMs() === 0) return Promise.resolve(this.permit());
    return new Promise<Permit>((resolve) => {
      this.waiters.push(() => resolve(this.permit()));
      this.wake();
    });
  }

  private permit(): Permit {
    const ticket = this.controller.start();
    let finished = false;
    return {
      done: (outcome) => {
        if (finished) return;
        finished = true;
        this.controller.finish(ticket, outcome);
        this.wake();
      },
    };
  }

  /** Lets waiters start while the controller allows; otherwise sets a timer for pacing or a pause. */
  private wake(): void {
    for (;;) {
      if (this.waiters.length === 0) return;
      const delay = this.controller.delayMs();
      if (delay === 0) {
        this.waiters.shift()!();
        continue;
      }
      if (delay !== Infinity && !this.timer) {
        this.timer = setTimeout(
          () => {
            this.timer = undefined;
            this.wake();
          },
          Math.max(1, Math.ceil(delay)),
        );
      }
      return;
    }
  }
}

function clamp(n: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, n));
}

function round(n: number): number {
  return Number.isFinite(n) ? Math.round(n * 100) / 100 : 0;
}
