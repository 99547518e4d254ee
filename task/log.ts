/**
 * The task's log: one JSON line per event on stdout (pino). Every field and the message pass core/redact.ts (known
 * secrets masked, control characters escaped), so text a hub or the warehouse brought along is harmless; the redact
 * paths guard fields that might one day hold a credential.
 */
import pino, { type Logger } from "pino";
import { redact, redactDeep } from "../core/redact";

export type { Logger };

const REDACT = [
  "password",
  "clientSecret",
  "client_secret",
  "credentialsString",
  "authorization",
  "token",
  "access_token",
  "*.password",
  "*.clientSecret",
  "*.authorization",
  "*.token",
  "headers.authorization",
];

export function createLogger(
  destination: NodeJS.WritableStream | number = 1,
  level = process.env.HUB_EXPORT_LOG_LEVEL ?? "info",
): Logger {
  const stream = typeof destination === "number" ? pino.destination({ fd: destination, sync: true }) : destination;
  return pino(
    {
      base: { task: "hub-export" },
      level,
      redact: { paths: REDACT, censor: "[secret]" },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }), log: (fields) => redactDeep(fields) },
      // The message is no field: a line may name warehouse values (extract.badRows) or quote an answer.
      hooks: {
        logMethod(args, method) {
          method.apply(this, args.map((a) => (typeof a === "string" ? redact(a) : a)) as Parameters<typeof method>);
        },
      },
    },
    stream,
  );
}

/** Progress of a long phase: a line every 5 s with counts and the rate since the phase began. */
export class Progress {
  private started = Date.now();
  private last = 0;
  constructor(
    private readonly log: Logger,
    private readonly phase: string,
  ) {}

  /** Logs when the interval has passed (or `force`); `done` is the count the rate is computed on. */
  tick(done: number, fields: Record<string, unknown> = {}, force = false): void {
    const now = Date.now();
    if (!force && now - this.last < 5000) return;
    this.last = now;
    const seconds = (now - this.started) / 1000;
    this.log.info(
      {
        event: "progress",
        phase: this.phase,
        done,
        ...fields,
        seconds: round(seconds),
        ratePerSecond: round(seconds > 0 ? done / seconds : 0),
      },
      `${this.phase}: ${done} done`,
    );
  }
}

export function round(n: number): number {
  return Math.round(n * 100) / 100;
}
