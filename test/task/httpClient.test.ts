/**
 * The task's HTTP client (task/http/client.ts) against servers on loopback that misbehave: a total deadline per
 * request, answers read up to 64 KiB, a retry budget, and a run's stop ending retries at once and abandoning requests
 * in flight at its grace period. Also where its settings come from (task/context.ts).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  AnswerTooLongError,
  Attempts,
  createAgent,
  HubHttp,
  MAX_ANSWER_BYTES,
  RequestDeadlineError,
} from "../../task/http/client";
import { RunStop, RunStopped } from "../../task/stop";
import { settingsFromEnv } from "../../task/context";
import { STOP_GRACE_SECONDS, STOP_TIMEOUT_SECONDS } from "../../core/runDeadline";
import type { Dispatcher } from "undici";

type Behaviour = (req: http.IncomingMessage, res: http.ServerResponse) => void;

describe("the task's HTTP client", () => {
  let server: http.Server;
  let base: string;
  let behave: Behaviour = (_req, res) => res.end("{}");
  /** Bytes the server managed to write of its last answer before the client went away. */
  let written = 0;
  let dispatcher: Dispatcher;
  beforeAll(async () => {
    server = http.createServer((req, res) => behave(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    dispatcher = createAgent(8);
  });
  afterAll(async () => {
    await dispatcher.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  const get = (client: HubHttp) => client.send({ origin: base, path: "/x", method: "GET" });
  const fast = { attempts: 8, baseMs: 1, maxMs: 5 };

  it("ends a request that drips at its total deadline, though every byte arrives well within the read timeout", async () => {
    let requests = 0;
    let closed!: Promise<unknown>;
    behave = (_req, res) => {
      requests++;
      res.writeHead(200);
      const t = setInterval(() => res.write(" "), 50);
      closed = new Promise((resolve) => res.on("close", resolve));
      res.on("close", () => clearInterval(t));
    };
    const err = await get(new HubHttp(dispatcher, fast, { deadlineMs: 400, budgetMs: 5000 })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RequestDeadlineError);
    expect((err as Error).message).toBe("no complete answer within 0.4 s (the request's deadline)");
    // One attempt, whose connection the client closed: the answer that never ends is not read on (a hang would be
    // the test's timeout).
    await closed;
    expect(requests).toBe(1);
  });

  it("ends a request whose headers never come at the deadline", async () => {
    behave = () => {};
    const err = await get(new HubHttp(dispatcher, fast, { deadlineMs: 300, budgetMs: 5000 })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RequestDeadlineError);
  });

  it("reads an answer up to 64 KiB and cuts the stream beyond it: a permanent failure", async () => {
    behave = (_req, res) => {
      res.writeHead(200);
      written = 0;
      const chunk = Buffer.alloc(16 * 1024, "x");
      const pump = () => {
        while (!res.destroyed && written < 512 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once("drain", pump);
        }
        res.end();
      };
      pump();
    };
    const err = await get(new HubHttp(dispatcher, fast)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AnswerTooLongError);
    expect((err as Error).message).toBe(
      "the answer is longer than 64 KiB; it was cut off and the request is not retried",
    );
    // The server could write little more than the cap and the socket buffers before the connection closed.
    expect(written).toBeLessThan(MAX_ANSWER_BYTES + 8 * 1024 * 1024);
    behave = (_req, res) => res.end(JSON.stringify({ ok: "x".repeat(MAX_ANSWER_BYTES - 100) }));
    expect((await get(new HubHttp(dispatcher, fast))).status).toBe(200);
  });

  it("gives a request's attempts a budget: no attempt starts after it, and the last wait is not taken", async () => {
    // A controlled clock: the waits take no real time.
    vi.useFakeTimers({ toFake: ["Date", "setTimeout", "clearTimeout"] });
    const started = Date.now();
    const client = new HubHttp(
      dispatcher,
      { attempts: 100, baseMs: 50, maxMs: 50 },
      { deadlineMs: 1000, budgetMs: 300 },
    );
    const attempts = new Attempts(client);
    const startedAt: number[] = [];
    try {
      while (attempts.next()) {
        startedAt.push(Date.now() - started);
        const wait = attempts.backoff();
        // Every wait is under 50 ms (the backoff's ceiling).
        await vi.advanceTimersByTimeAsync(50);
        await wait;
      }
      expect(startedAt.every((t) => t < 300)).toBe(true);
    } finally {
      vi.useRealTimers();
    }
    expect(attempts.attempt).toBeLessThan(100);
    expect(attempts.attempt).toBe(startedAt.length);
    expect(attempts.describe()).toMatch(/^after \d+ attempts \(its retry budget of 0.3 s is used up\)$/);
    const few = new Attempts(new HubHttp(dispatcher, { attempts: 2, baseMs: 1, maxMs: 1 }));
    while (few.next()) await few.backoff();
    expect(few.describe()).toBe("after 2 attempts");
  });

  it("a stop ends the waits between attempts at once, lets requests in flight finish, and abandons them at two thirds of the grace period", async () => {
    const stop = new RunStop({ graceMs: 1500 });
    const client = new HubHttp(
      dispatcher,
      { attempts: 8, baseMs: 10_000, maxMs: 10_000 },
      { deadlineMs: 60_000, budgetMs: 600_000 },
      stop,
    );
    // A wait for a retry, and a request the server answers once the stop is requested, and one it never answers. The
    // wait is the hub's Retry-After of 10 s: a jittered one may be a few milliseconds and end before the stop.
    const attempts = new Attempts(client);
    attempts.next();
    const waiting = attempts.backoff("10").catch((e: unknown) => e);
    let answerSlow!: () => void;
    const arrived = new Set<string>();
    let bothArrived!: () => void;
    const inFlight = new Promise<void>((resolve) => (bothArrived = resolve));
    behave = (req, res) => {
      if (req.url === "/slow") answerSlow = () => res.end("{}");
      arrived.add(req.url!);
      if (arrived.size === 2) bothArrived();
    };
    const settled: string[] = [];
    const slow = client.send({ origin: base, path: "/slow", method: "GET" }).finally(() => settled.push("slow"));
    const never = client
      .send({ origin: base, path: "/never", method: "GET" })
      .catch((e: unknown) => e)
      .finally(() => settled.push("never"));
    await inFlight;
    stop.request("SIGTERM");
    // The 10 s wait ends with the stop, not by itself (then it would resolve, not throw RunStopped).
    expect(await waiting).toBeInstanceOf(RunStopped);
    expect(() => attempts.next()).toThrow(RunStopped);
    answerSlow();
    expect((await slow).status).toBe(200);
    const abandoned = await never;
    expect(abandoned).toBeInstanceOf(RunStopped);
    expect((abandoned as RunStopped).reason).toBe("SIGTERM");
    // The request in flight was let finish after the stop; the one never answered was abandoned only later (at two
    // thirds of the grace period: 1 s).
    expect(settled).toEqual(["slow", "never"]);
    // No new request once stopping.
    await expect(client.send({ origin: base, path: "/x", method: "GET" })).rejects.toBeInstanceOf(RunStopped);
    stop.dispose();
  });
});

describe("the run's limits from the environment", () => {
  it("defaults: 60 s per request, 180 s of retries, the run deadline from the container's schedule, a grace period inside ECS's stop timeout", () => {
    const s = settingsFromEnv({ HUB_EXPORT_SCHEDULE: "cron(0 */6 * * ? *)" });
    expect(s.limits).toEqual({ deadlineMs: 60_000, budgetMs: 180_000 });
    expect(s.runDeadlineSeconds).toBe(6 * 3600 - STOP_TIMEOUT_SECONDS);
    expect(s.stopGraceSeconds).toBe(STOP_GRACE_SECONDS);
  });

  it("each can be set, in seconds; a bad value names its variable", () => {
    const s = settingsFromEnv({
      HUB_EXPORT_REQUEST_DEADLINE_SECONDS: "2.5",
      HUB_EXPORT_RETRY_BUDGET_SECONDS: "10",
      HUB_EXPORT_RUN_DEADLINE_SECONDS: "3600",
      HUB_EXPORT_STOP_GRACE_SECONDS: "30",
    });
    expect(s).toMatchObject({
      limits: { deadlineMs: 2500, budgetMs: 10_000 },
      runDeadlineSeconds: 3600,
      stopGraceSeconds: 30,
    });
    expect(() => settingsFromEnv({ HUB_EXPORT_REQUEST_DEADLINE_SECONDS: "soon" })).toThrow(
      "HUB_EXPORT_REQUEST_DEADLINE_SECONDS must be a positive number of seconds, got 'soon'",
    );
    expect(() => settingsFromEnv({ HUB_EXPORT_RUN_DEADLINE_SECONDS: "0" })).toThrow(
      /HUB_EXPORT_RUN_DEADLINE_SECONDS must be a positive number/,
    );
  });
});
