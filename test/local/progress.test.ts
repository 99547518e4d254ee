import { describe, expect, it } from "vitest";
import { PassThrough } from "node:stream";
import { createProgress } from "../../local/progress";
import { progressOf } from "../../local/taskProcess";
import type { PhaseUpdate } from "../../local/progress";

function capture(tty: boolean) {
  const stream = new PassThrough() as PassThrough & { isTTY?: boolean };
  if (tty) stream.isTTY = true;
  let text = "";
  stream.on("data", (d) => (text += d));
  return { stream, text: () => text };
}

describe("the progress display", () => {
  it("prints plain lines when the output is not a terminal", () => {
    const out = capture(false);
    const p = createProgress(out.stream);
    p.step("running the export task");
    p.update({ phase: "extract", done: 1000, unit: "employees", seconds: 2 });
    p.update({ phase: "extract", done: 1500, unit: "employees", seconds: 3 }); // within 5 s of the last line: not printed
    p.update({ phase: "extract", done: 2000, unit: "employees", seconds: 4, finished: true });
    expect(out.text()).toBe(
      "» running the export task\n  extract                1,000 employees 500/s\n  extract                2,000 employees 500/s done in 4.0s\n",
    );
    expect(out.text()).not.toContain("\x1b[");
  });

  it("rewrites its phase lines in place on a terminal", () => {
    const out = capture(true);
    const p = createProgress(out.stream);
    p.update({ phase: "publish", done: 10, seconds: 1 });
    p.update({ phase: "publish", done: 20, seconds: 2 });
    expect(out.text()).toContain("\x1b[1A\x1b[0J");
    expect(out.text().trimEnd().split("\n").pop()).toBe("\x1b[1A\x1b[0J  publish                   20  10/s");
  });
});

describe("progressOf", () => {
  it("turns the task's progress and <phase>.done events into display updates", () => {
    const last = new Map<string, PhaseUpdate>();
    const update = progressOf({ event: "progress", phase: "publish", done: 50, seconds: 1.5 }, last)!;
    expect(update).toEqual({ phase: "publish", done: 50, unit: "messages", seconds: 1.5 });
    last.set("publish", update);
    expect(progressOf({ event: "publish.done", published: 50 }, last)).toEqual({
      phase: "publish",
      done: 50,
      unit: "messages",
      seconds: 1.5,
      finished: true,
    });
    expect(progressOf({ event: "run.done" }, last)).toBeNull();
    expect(progressOf({ event: "run.open", transactionId: "x" }, last)).toBeNull();
  });

  it("ends each phase with the total its done event carries, and never counts backwards", () => {
    const last = new Map<string, PhaseUpdate>();
    // ERS entities are counted while publishing; the ERS phase then counts what was left (nothing) from 0.
    last.set("ers", progressOf({ event: "progress", phase: "ers", done: 1000, seconds: 2 }, last)!);
    expect(progressOf({ event: "progress", phase: "ers", done: 0, seconds: 0 }, last)).toBeNull();
    expect(progressOf({ event: "ers.done", entities: 1000, streamed: 1000 }, last)).toMatchObject({
      phase: "ers",
      done: 1000,
      finished: true,
    });
    expect(progressOf({ event: "extract.done", employees: 120, messages: 120 }, new Map())).toMatchObject({
      phase: "extract",
      done: 120,
      unit: "employees",
      finished: true,
    });
    expect(progressOf({ event: "publish.done", published: 118, failed: 2 }, new Map())).toMatchObject({
      phase: "publish",
      done: 120,
      finished: true,
    });
  });
});
