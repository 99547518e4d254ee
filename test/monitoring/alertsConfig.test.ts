import { describe, expect, it } from "vitest";
import { validateStackConfig, ConfigError } from "../../config/validate";
import { defaultNoCompletedRunHours, schedulePeriodHours } from "../../core/schedulePeriod";
import { rawConfig } from "../support/rawConfig";
import { Secret } from "../../core/secret";

function problems(edit: (c: ReturnType<typeof rawConfig>) => void, fromFile = false): string[] {
  const raw = rawConfig();
  edit(raw);
  try {
    validateStackConfig(raw, { source: "test", stack: "dev", fromFile });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).lines.slice(1);
  }
  return [];
}

describe("schedule period", () => {
  it.each([
    ["rate(1 hour)", 1],
    ["rate(30 minutes)", 0.5],
    ["rate(2 days)", 48],
    ["cron(0 3 * * ? *)", 24],
    ["cron(30 2 * * ? *)", 24],
    ["cron(0 */6 * * ? *)", 6],
    ["cron(0 1,13 * * ? *)", 12],
    ["cron(0 3 ? * MON-FRI *)", 72],
    ["cron(0 3 ? * 2-6 *)", 72],
    ["cron(15 8 ? * SUN *)", 168],
    ["cron(0 0 1 * ? *)", 31 * 24],
    ["cron(0/15 * * * ? *)", 0.25],
  ])("%s starts at most %d hours apart", (expression, hours) => {
    expect(schedulePeriodHours(expression)).toBe(hours);
  });

  it.each([
    "cron(0 3 L * ? *)",
    "cron(0 3 ? * 6#3 *)",
    "cron(0 3 * * ? 2027)",
    "at(2027-01-01T00:00:00)",
    "cron(0 25 * * ? *)",
    "cron(0 3 * *)",
  ])("%s has no derivable period", (expression) => {
    expect(schedulePeriodHours(expression)).toBeUndefined();
  });

  it("the default allows a quarter of the period, and at least 2 hours, for the run itself", () => {
    expect(defaultNoCompletedRunHours(24)).toBe(30);
    expect(defaultNoCompletedRunHours(1)).toBe(3);
    expect(defaultNoCompletedRunHours(0.25)).toBe(3);
    expect(defaultNoCompletedRunHours(72)).toBe(90);
  });
});

describe("hubExport:alerts", () => {
  it("is optional: no subscriptions, and N derived from the schedule", () => {
    const config = validateStackConfig(rawConfig(), { source: "test" });
    expect(config.alerts).toEqual({
      email: [],
      https: [],
      noCompletedRunWithinHours: defaultNoCompletedRunHours(schedulePeriodHours(config.schedule.expression)!),
    });
  });

  it("takes email addresses, secret https endpoints and an explicit N", () => {
    const raw = rawConfig() as Record<string, unknown>;
    raw.alerts = {
      email: ["ops@acme.example.com"],
      https: ["https://hooks.example.com/T0/abc"],
      noCompletedRunWithinHours: 50,
    };
    const config = validateStackConfig(raw, { source: "test" });
    expect(config.alerts.email).toEqual(["ops@acme.example.com"]);
    expect(config.alerts.https[0]).toBeInstanceOf(Secret);
    expect(config.alerts.https[0].reveal()).toBe("https://hooks.example.com/T0/abc");
    expect(JSON.stringify(config)).not.toContain("hooks.example.com");
    expect(config.alerts.noCompletedRunWithinHours).toBe(50);
  });

  it("a one-time schedule has no such alarm unless N is given", () => {
    const config = validateStackConfig(
      { ...rawConfig(), schedule: { expression: "at(2027-01-01T00:00:00)" } },
      { source: "test" },
    );
    expect(config.alerts.noCompletedRunWithinHours).toBeUndefined();
  });

  it.each<[string, (c: any) => void, string]>([
    [
      "a bad email",
      (c) => (c.alerts = { email: ["ops.example.com"] }),
      "hubExport:alerts.email[0]: must be an email address",
    ],
    [
      "an http endpoint",
      (c) => (c.alerts = { https: ["http://hooks.example.com/x"] }),
      "hubExport:alerts.https[0]: must be an https:// URL",
    ],
    [
      "N over 7 days",
      (c) => (c.alerts = { noCompletedRunWithinHours: 200 }),
      "hubExport:alerts.noCompletedRunWithinHours: must be at most 168",
    ],
    [
      "N of 0",
      (c) => (c.alerts = { noCompletedRunWithinHours: 0 }),
      "hubExport:alerts.noCompletedRunWithinHours: must be at least 1",
    ],
    ["an unknown key", (c) => (c.alerts = { sms: ["+1555"] }), "hubExport:alerts.sms: is not a known key"],
    [
      "a schedule with L and no N",
      (c) => (c.schedule.expression = "cron(0 3 L * ? *)"),
      "hubExport:alerts.noCompletedRunWithinHours: is required: the period of schedule cron(0 3 L * ? *) cannot be derived",
    ],
    [
      "a weekly schedule and no N",
      (c) => (c.schedule.expression = "cron(0 3 ? * MON *)"),
      "hubExport:alerts.noCompletedRunWithinHours: is required: schedule cron(0 3 ? * MON *) runs 168 hours apart",
    ],
  ])("rejects %s", (_what, edit, expected) => {
    const lines = problems(edit);
    expect(
      lines.some((l) => l.includes(expected)),
      lines.join("\n"),
    ).toBe(true);
  });

  it("an https endpoint in a stack file must be ciphertext", () => {
    const lines = problems((c: any) => (c.alerts = { https: ["https://hooks.example.com/x"] }), true);
    expect(lines.some((l) => l.includes("hubExport:alerts.https[0]: is a secret in plain text"))).toBe(true);
  });
});
