/**
 * A circuit breaker per link (an API in a hub region): a hub that stops answering costs a run a few deadlines, not a
 * retry budget per batch. Its rules (what fails a request, when a link opens, the next run's half-open probe) are in
 * task/README.md, "Talking to the hub"; its settings are BREAKER_ENV.
 *
 * Hand-written rather than opossum or cockatiel: those wrap a function call and reopen on a timer, while this one must
 * classify HTTP answers (a 5xx is a value, not an exception), stay open for the run, start half open from the last
 * run's record, and hold the link's other requests while its probe is out; the adapter would be as long as this file.
 */
import { RunStopped } from "../stop";

export interface BreakerSettings {
  /** Requests failed in a row that open the link, once none was answered for windowMs. */
  failures: number;
  /** The window of the failure rate, and the time without an answer that `failures` needs. */
  windowMs: number;
  /** Share of failed requests (0 to 1) in the window that opens the link... */
  rate: number;
  /** ...once the window holds this many requests. */
  minRequests: number;
}

/** The environment variables of the settings, with their defaults (task/context.ts reads them; task/README.md lists them). */
export const BREAKER_ENV = {
  failures: { name: "HUB_EXPORT_BREAKER_FAILURES", default: 3 },
  windowMs: { name: "HUB_EXPORT_BREAKER_WINDOW_SECONDS", default: 30 },
  rate: { name: "HUB_EXPORT_BREAKER_FAILURE_PERCENT", default: 80 },
  minRequests: { name: "HUB_EXPORT_BREAKER_MIN_REQUESTS", default: 20 },
} as const;

export const DEFAULT_BREAKER: BreakerSettings = {
  failures: BREAKER_ENV.failures.default,
  windowMs: BREAKER_ENV.windowMs.default * 1000,
  rate: BREAKER_ENV.rate.default / 100,
  minRequests: BREAKER_ENV.minRequests.default,
};

export type BreakerState = "closed" | "probing" | "open";
export type Verdict = "answered" | "failed" | "none";

/** The link is open: its work stops for this run, resumably (its messages stay queued for the next run). */
export class LinkOpen extends RunStopped {
  constructor(
    readonly link: string,
    reason: string,
  ) {
    super(reason);
    this.name = "LinkOpen";
  }
}

/**
 * A request let through; `done` once its verdict is known (`error`: the failure, redacted; `deadlineSentAt`: when a
 * request that ended at its deadline was sent, on the breaker's clock).
 */
export interface BreakerTicket {
  done(verdict: Verdict, error?: string, deadlineSentAt?: number): void;
}

/** The seam between a sender and a breaker, like RequestGate for the concurrency. */
export interface BreakerGate {
  /** Resolves when the request may go; throws LinkOpen when the link is open. */
  admit(): Promise<BreakerTicket>;
  /** The breaker's clock (deadlineSentAt). */
  now(): number;
  isOpen(): boolean;
  /** Throws LinkOpen when the link is open: before each attempt, so that none is started or given up as failed. */
  throwIfOpen(): void;
}

export interface BreakerStats {
  state: BreakerState;
  /** Requests ended by the deadline, a network error or a 5xx; of them, by the deadline. */
  failures: number;
  deadlines: number;
  /**
   * Deadline waits one after another (a request sent after another had ended at its deadline): the time the link
   * cost the run is about this many deadlines, whatever the number of requests.
   */
  deadlineWaits: number;
  /** Why it opened. */
  opened?: string;
  lastError?: string;
}

/** Per-second counts of the requests that ended: the failure rate's window, in bounded memory. */
interface Second {
  at: number;
  total: number;
  failed: number;
}

export class Breaker implements BreakerGate {
  state: BreakerState = "closed";
  /** Why it opened, and the last failure's text. */
  why?: string;
  lastError?: string;
  private streak = 0;
  /** The last answer, or the first request: a streak of failures counts from there. */
  private answeredAt?: number;
  private readonly seconds: Second[] = [];
  private probeOut = false;
  private readonly waiting: { resolve: () => void; reject: (err: unknown) => void }[] = [];
  private readonly counts = { failures: 0, deadlines: 0, deadlineWaits: 0 };
  /** When the last request that ended at its deadline ended. */
  private lastDeadline = -Infinity;
  /** Admits the link's other requests (an authorize): they neither wait for a probe nor close the link when answered. */
  readonly auxiliary: BreakerGate;

  constructor(
    readonly name: string,
    private readonly settings: BreakerSettings = DEFAULT_BREAKER,
    private readonly onOpen: (breaker: Breaker) => void = () => {},
    readonly now: () => number = () => performance.now(),
  ) {
    this.auxiliary = {
      admit: () => this.admit(false),
      now: () => this.now(),
      isOpen: () => this.isOpen(),
      throwIfOpen: () => this.throwIfOpen(),
    };
  }

  /** The last run left the link open: its first request goes alone, and decides. */
  probeFirst(): void {
    if (this.state === "closed") this.state = "probing";
  }

  async admit(work = true): Promise<BreakerTicket> {
    this.throwIfOpen();
    this.answeredAt ??= this.now();
    const ticket: BreakerTicket = {
      done: (verdict, error, deadlineSentAt) => this.record(work, verdict, error, deadlineSentAt),
    };
    if (this.state !== "probing" || !work) return ticket;
    if (!this.probeOut) {
      this.probeOut = true;
      return ticket;
    }
    return new Promise((resolve, reject) => this.waiting.push({ resolve: () => resolve(ticket), reject }));
  }

  isOpen(): boolean {
    return this.state === "open";
  }

  throwIfOpen(): void {
    if (this.isOpen()) throw this.error();
  }

  error(): LinkOpen {
    return new LinkOpen(
      this.name,
      `hub link ${this.name} is open (${this.why}); last error: ${this.lastError ?? "none"}`,
    );
  }

  snapshot(): BreakerStats {
    return {
      state: this.state,
      ...this.counts,
      ...(this.why ? { opened: this.why } : {}),
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }

  private record(work: boolean, verdict: Verdict, error?: string, deadlineSentAt?: number): void {
    if (verdict === "none") {
      // A probe that was not sent (or was abandoned) decides nothing: the next waiting request probes.
      if (work && this.state === "probing") {
        const next = this.waiting.shift();
        this.probeOut = next !== undefined;
        next?.resolve();
      }
      return;
    }
    const now = this.now();
    this.count(now, verdict === "failed");
    if (verdict === "answered") {
      this.streak = 0;
      this.answeredAt = now;
      if (work && this.state === "probing") {
        this.state = "closed";
        this.probeOut = false;
        for (const w of this.waiting.splice(0)) w.resolve();
      }
      return;
    }
    this.counts.failures++;
    if (deadlineSentAt !== undefined) {
      this.counts.deadlines++;
      if (deadlineSentAt >= this.lastDeadline) this.counts.deadlineWaits++;
      this.lastDeadline = Math.max(this.lastDeadline, now);
    }
    this.lastError = error ?? "failed";
    this.streak++;
    if (this.state === "open") return;
    if (this.state === "probing")
      return this.open("the first request of the run, its probe, failed: the last run left it open");
    const quiet = now - (this.answeredAt ?? now);
    if (this.streak >= this.settings.failures && quiet >= this.settings.windowMs) {
      return this.open(
        `${this.streak} requests failed in a row and none was answered for ${Math.round(quiet / 1000)} s`,
      );
    }
    // count() has dropped the seconds before the window.
    const total = this.seconds.reduce((n, s) => n + s.total, 0);
    const failed = this.seconds.reduce((n, s) => n + s.failed, 0);
    if (total >= this.settings.minRequests && failed >= this.settings.rate * total) {
      return this.open(
        `${failed} of the ${total} requests of the last ${Math.round(this.settings.windowMs / 1000)} s failed`,
      );
    }
  }

  private open(why: string): void {
    this.state = "open";
    this.why = why;
    this.probeOut = false;
    for (const w of this.waiting.splice(0)) w.reject(this.error());
    this.onOpen(this);
  }

  private count(now: number, failed: boolean): void {
    const at = Math.floor(now / 1000);
    let last = this.seconds.at(-1);
    if (!last || last.at !== at) this.seconds.push((last = { at, total: 0, failed: 0 }));
    last.total++;
    if (failed) last.failed++;
    while (this.seconds.length > 0 && this.seconds[0].at * 1000 < now - this.settings.windowMs) this.seconds.shift();
  }
}
