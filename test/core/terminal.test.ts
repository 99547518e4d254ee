/** Colour follows https://no-color.org: any non-empty NO_COLOR turns it off; a pipe never gets it. */
import { afterEach, describe, expect, it, vi } from "vitest";
import { PassThrough } from "node:stream";
import { createProgress } from "../../local/progress";

function stepOn(tty: boolean): string {
  const stream = new PassThrough() as PassThrough & { isTTY?: boolean };
  if (tty) stream.isTTY = true;
  let text = "";
  stream.on("data", (d) => (text += d));
  const progress = createProgress(stream);
  progress.step("running the export task");
  progress.update({ phase: "publish", done: 10, seconds: 1 });
  progress.update({ phase: "publish", done: 20, seconds: 2 });
  return text;
}

describe("colour on a terminal", () => {
  afterEach(() => vi.unstubAllEnvs());

  it("is on without NO_COLOR, and with an empty NO_COLOR", () => {
    vi.stubEnv("NO_COLOR", undefined);
    expect(stepOn(true)).toContain("\x1b[1m»\x1b[0m running the export task\n");
    vi.stubEnv("NO_COLOR", "");
    expect(stepOn(true)).toContain("\x1b[1m»\x1b[0m running the export task\n");
  });

  it.each(["1", "true", "0"])("is off with NO_COLOR=%s; the progress lines are still rewritten in place", (value) => {
    vi.stubEnv("NO_COLOR", value);
    const text = stepOn(true);
    expect(text).toMatch(/^» running the export task\n/);
    expect(text).not.toMatch(/\x1b\[[0-9;]*m/);
    expect(text).toContain("\x1b[1A\x1b[0J  publish");
  });

  it("is off when the output is not a terminal, whatever NO_COLOR says", () => {
    vi.stubEnv("NO_COLOR", undefined);
    expect(stepOn(false)).not.toContain("\x1b[");
  });
});
