/**
 * The no-completed-run alarm's definition, evaluated hour by hour as CloudWatch evaluates it (metric math as the
 * CloudWatch User Guide describes EPOCH, FILL and IF; an alarm of N out of N periods): it does not fire before the
 * first scheduled run has had its chance, and fires N hours after the last completed run.
 */
import { describe, expect, it } from "vitest";
import { noCompletedRunAlarm, epochSeconds } from "../../components/monitoring/noCompletedRun";
import { defaultNoCompletedRunHours, schedulePeriodHours } from "../../core/schedulePeriod";

const HOUR = 3600;
const at = (iso: string) => epochSeconds(iso);
type Alarm = ReturnType<typeof noCompletedRunAlarm>;

/**
 * The value of the alarm's expression for the hour starting at `hour`, given the completed runs per hour (Sum of
 * RunsCompleted; an hour without a completed run has no data point): EPOCH is the hour's timestamp for every hour,
 * FILL(completed, 0) is 0 where data is missing, IF(TS < S, 1, TS) picks per hour.
 */
function value(alarm: Alarm, completions: Map<number, number>, hour: number): number {
  const expression = alarm.metricQueries.find((q) => q.returnData)!.expression!;
  const m = /^IF\(EPOCH\(completed\) < (\d+), 1, FILL\(completed, 0\)\)$/.exec(expression);
  if (!m) throw new Error(`an expression this evaluator does not know: ${expression}`);
  return hour < Number(m[1]) ? 1 : (completions.get(hour) ?? 0);
}

/** ALARM when each of the last evaluationPeriods complete hours before `now` breaches (datapointsToAlarm of them). */
function inAlarm(alarm: Alarm, completions: Map<number, number>, now: number): boolean {
  const hours = Array.from({ length: alarm.evaluationPeriods }, (_, i) => now - (i + 1) * HOUR);
  const breaching = hours.filter((h) => value(alarm, completions, h) < alarm.threshold).length;
  return breaching >= alarm.datapointsToAlarm;
}

/** The first hour boundary from `from` (inclusive) to `to` at which the alarm is in ALARM, or undefined. */
function firstAlarm(alarm: Alarm, completions: Map<number, number>, from: number, to: number): number | undefined {
  for (let t = from; t <= to; t += HOUR) if (inAlarm(alarm, completions, t)) return t;
  return undefined;
}

/** Daily runs at 03:00 UTC that complete within the hour, on the given days. */
function dailyRuns(days: string[]): Map<number, number> {
  return new Map(days.map((d) => [at(`${d}T03:00:00Z`), 1]));
}

const SCHEDULE = "cron(0 3 * * ? *)";
const HOURS = defaultNoCompletedRunHours(schedulePeriodHours(SCHEDULE)!)!;
/** Deployed at 10:00, seven hours after today's run: the first scheduled run is 17 hours away. */
const DEPLOYED = at("2026-11-01T10:00:00Z");
const alarm = noCompletedRunAlarm({ baseName: "hub-export-acme-qa", jobName: "JOB_QA", environment: "QA", hours: HOURS, watchStart: "2026-11-01T10:00:00Z" });

describe("the no-completed-run alarm over time", () => {
  it("watches N = 30 hours for a daily schedule: longer than the gap to the first scheduled run", () => {
    expect(HOURS).toBe(30);
    expect(alarm).toMatchObject({ evaluationPeriods: 30, datapointsToAlarm: 30, threshold: 1, comparisonOperator: "LessThanThreshold" });
    expect(alarm.alarmDescription).toContain("It does not fire before the first scheduled run has had its chance");
  });

  it("stays quiet after the first up, through the first scheduled run, and while the daily runs complete", () => {
    const runs = dailyRuns(["2026-11-02", "2026-11-03", "2026-11-04", "2026-11-05"]);
    expect(firstAlarm(alarm, runs, DEPLOYED, at("2026-11-06T03:00:00Z"))).toBeUndefined();
  });

  it("fires when the first scheduled run does not complete, once it has had its chance (30 hours after the up)", () => {
    const none = new Map<number, number>();
    const fired = firstAlarm(alarm, none, DEPLOYED, DEPLOYED + 72 * HOUR)!;
    expect(fired).toBe(DEPLOYED + 30 * HOUR);
    expect(fired).toBeGreaterThan(at("2026-11-02T03:00:00Z") + 6 * HOUR); // the first run's start, and 6 hours to complete
  });

  it("fires 30 hours after the last completed run when the runs stop, and clears with the next completed one", () => {
    const runs = dailyRuns(["2026-11-02", "2026-11-03"]);
    const last = at("2026-11-03T03:00:00Z");
    expect(firstAlarm(alarm, runs, DEPLOYED, last + 72 * HOUR)).toBe(last + 31 * HOUR);
    runs.set(at("2026-11-06T03:00:00Z"), 1);
    expect(inAlarm(alarm, runs, at("2026-11-06T04:00:00Z"))).toBe(false);
  });

  it("unlike the definition it replaces (the metric alone, missing data breaching), which fired at the first evaluation", () => {
    // Before the first run there is no data point at all: every one of the 30 hours is missing, so breaching.
    const old = (completions: Map<number, number>, now: number) => Array.from({ length: HOURS }, (_, i) => completions.get(now - (i + 1) * HOUR) ?? 0).every((v) => v < 1);
    expect(old(new Map(), DEPLOYED + HOUR)).toBe(true);
    expect(inAlarm(alarm, new Map(), DEPLOYED + HOUR)).toBe(false);
  });
});
