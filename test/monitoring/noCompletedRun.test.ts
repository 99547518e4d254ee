/**
 * The no-completed-run alarm over time, and every alarm of a new stack. The alarms are evaluated as the CloudWatch
 * documentation describes them, nothing more: a metric alarm of M out of N periods, missing data treated as its
 * treatMissingData says ("notBreaching: missing data points are treated as good and within the threshold"), and a
 * composite alarm in ALARM only when its rule is true. Neither the old definition's metric math nor what CloudWatch does
 * with an empty series is assumed.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { FAILED_WITHIN_HOURS, noCompletedRunAlarms } from "../../components/monitoring/noCompletedRun";
import { defaultNoCompletedRunHours, schedulePeriodHours } from "../../core/schedulePeriod";
import type { PlanRun } from "../../components/planner";
import { inputs, ofType, planOf } from "../fixtures/plan";
import { fixtureStack } from "../fixtures/stacks";

const HOUR = 3600;
const at = (iso: string) => Date.parse(iso) / 1000;

type State = "OK" | "ALARM" | "INSUFFICIENT_DATA";
/** The run ends of an hour (its start, epoch seconds): RunsCompleted 1 or 0 each. */
type Series = Map<number, number[]>;

interface MetricAlarmDefinition {
  statistic: string;
  evaluationPeriods: number;
  datapointsToAlarm?: number;
  threshold: number;
  comparisonOperator: string;
  treatMissingData?: string;
}

const STATISTICS: Record<string, (values: number[]) => number> = {
  Maximum: (v) => Math.max(...v),
  Minimum: (v) => Math.min(...v),
  Sum: (v) => v.reduce((a, b) => a + b, 0),
};
const COMPARE: Record<string, (v: number, t: number) => boolean> = {
  GreaterThanThreshold: (v, t) => v > t,
  GreaterThanOrEqualToThreshold: (v, t) => v >= t,
  LessThanThreshold: (v, t) => v < t,
  LessThanOrEqualToThreshold: (v, t) => v <= t,
};

/**
 * A metric alarm at `now`: the last evaluationPeriods complete hours, each breaching, good or missing; missing ones
 * count as treatMissingData says. With no data at all: breaching is ALARM, notBreaching OK, missing and ignore
 * INSUFFICIENT_DATA (a new alarm's state, kept).
 */
function metricAlarmState(alarm: MetricAlarmDefinition, series: Series, now: number): State {
  const hours = Array.from({ length: alarm.evaluationPeriods }, (_, i) => now - (i + 1) * HOUR);
  const points = hours
    .map((h) => series.get(h))
    .map((v) =>
      v && v.length ? COMPARE[alarm.comparisonOperator](STATISTICS[alarm.statistic](v), alarm.threshold) : undefined,
    );
  const missing = alarm.treatMissingData ?? "missing";
  if (points.every((p) => p === undefined) && (missing === "missing" || missing === "ignore"))
    return "INSUFFICIENT_DATA";
  const breaching = points.filter((p) => p === true || (p === undefined && missing === "breaching")).length;
  return breaching >= (alarm.datapointsToAlarm ?? alarm.evaluationPeriods) ? "ALARM" : "OK";
}

/** A rule of ALARM("name"), NOT and AND, as the composite evaluates it over its children's states. */
function ruleIsTrue(rule: string, states: Record<string, State>): boolean {
  return rule.split(" AND ").every((term) => {
    const m = /^(NOT )?ALARM\("(.+)"\)$/.exec(term.trim());
    if (!m) throw new Error(`a rule this evaluator does not know: ${rule}`);
    if (!(m[2] in states)) throw new Error(`the rule names an alarm the stack does not have: ${m[2]}`);
    return (states[m[2]] === "ALARM") !== (m[1] !== undefined);
  });
}

const SCHEDULE = "cron(0 3 * * ? *)";
const HOURS = defaultNoCompletedRunHours(schedulePeriodHours(SCHEDULE)!);
const definition = noCompletedRunAlarms({
  baseName: "hub-export-acme-qa",
  jobName: "JOB_QA",
  environment: "QA",
  hours: HOURS,
});

/** The composite's state at `now`, its conditions evaluated in either order (`stale`: one of them not yet). */
function alarmState(series: Series, now: number, stale?: { condition: "completed" | "failed"; series: Series }): State {
  const states: Record<string, State> = {};
  for (const key of ["completed", "failed"] as const) {
    const seen = stale?.condition === key ? stale.series : series;
    states[definition[key].name] = metricAlarmState(definition[key], seen, now);
  }
  return ruleIsTrue(definition.alarm.alarmRule, states) ? "ALARM" : "OK";
}

/** Daily runs at 03:00 UTC ending within their hour: 1 completed, 0 not. */
function dailyRuns(days: Record<string, number>): Series {
  return new Map(Object.entries(days).map(([d, v]) => [at(`${d}T03:00:00Z`), [v]]));
}

/** The first hour boundary from `from` to `to` at which the alarm is in ALARM. */
function firstAlarm(series: Series, from: number, to: number): number | undefined {
  for (let t = from; t <= to; t += HOUR) if (alarmState(series, t) === "ALARM") return t;
  return undefined;
}

const DEPLOYED = at("2026-11-01T10:00:00Z");

describe("the no-completed-run alarm over time", () => {
  it("watches N = 30 hours for a daily schedule, through a composite of two conditions that never notify", () => {
    expect(HOURS).toBe(30);
    expect(definition.completed).toMatchObject({
      evaluationPeriods: 30,
      datapointsToAlarm: 1,
      treatMissingData: "notBreaching",
      actionsEnabled: false,
    });
    expect(definition.failed).toMatchObject({
      evaluationPeriods: FAILED_WITHIN_HOURS,
      datapointsToAlarm: 1,
      treatMissingData: "notBreaching",
      actionsEnabled: false,
    });
    expect(definition.alarm.alarmRule).toBe(
      `ALARM("${definition.failed.name}") AND NOT ALARM("${definition.completed.name}")`,
    );
  });

  it("is OK on a new stack, whatever comes of an empty series, and stays quiet while the daily runs complete", () => {
    expect(alarmState(new Map(), DEPLOYED)).toBe("OK");
    expect(firstAlarm(new Map(), DEPLOYED, DEPLOYED + 10 * 24 * HOUR)).toBeUndefined();
    const runs = dailyRuns({ "2026-11-02": 1, "2026-11-03": 1, "2026-11-04": 1, "2026-11-05": 1 });
    expect(firstAlarm(runs, DEPLOYED, at("2026-11-06T03:00:00Z"))).toBeUndefined();
  });

  it("fires when the first scheduled run ends without completing, as it ends", () => {
    const runs = dailyRuns({ "2026-11-02": 0 });
    expect(firstAlarm(runs, DEPLOYED, DEPLOYED + 72 * HOUR)).toBe(at("2026-11-02T04:00:00Z"));
  });

  it("fires N hours after the last completed run once a run has failed since, and a completed run clears it", () => {
    const runs = dailyRuns({ "2026-11-02": 1, "2026-11-03": 1, "2026-11-04": 0, "2026-11-05": 0 });
    const last = at("2026-11-03T03:00:00Z");
    expect(firstAlarm(runs, DEPLOYED, last + 72 * HOUR)).toBe(last + 31 * HOUR);
    runs.set(at("2026-11-06T03:00:00Z"), [1]);
    expect(alarmState(runs, at("2026-11-06T04:00:00Z"))).toBe("OK");
  });

  it("a completed run never sets it off, whichever condition CloudWatch evaluates first", () => {
    // The first run of a stack completes, and a completion after more than N hours without one.
    for (const [before, end] of [
      [new Map(), at("2026-11-02T03:00:00Z")],
      [dailyRuns({ "2026-11-02": 1, "2026-11-03": 0, "2026-11-04": 0 }), at("2026-11-05T03:00:00Z")],
    ] as const) {
      const after = new Map(before);
      after.set(end, [1]);
      for (const condition of ["completed", "failed"] as const) {
        const was = alarmState(before, end + HOUR);
        const midway = alarmState(after, end + HOUR, { condition, series: before });
        // Midway it is what it was or OK: never an ALARM that the completion itself brought.
        expect(midway === "OK" || midway === was, `${condition} evaluated last`).toBe(true);
      }
      expect(alarmState(after, end + HOUR)).toBe("OK");
    }
  });

  it("unlike the definition it replaces (the metric alone, missing data breaching), which fired at the first evaluation", () => {
    const old: MetricAlarmDefinition = {
      statistic: "Sum",
      evaluationPeriods: HOURS,
      datapointsToAlarm: HOURS,
      threshold: 1,
      comparisonOperator: "LessThanThreshold",
      treatMissingData: "breaching",
    };
    expect(metricAlarmState(old, new Map(), DEPLOYED + HOUR)).toBe("ALARM");
    expect(alarmState(new Map(), DEPLOYED + HOUR)).toBe("OK");
  });
});

describe.each(["qa", "prod"] as const)("every alarm of a new stack %s", (stack) => {
  let run: PlanRun;
  beforeAll(async () => {
    run = await planOf(fixtureStack(stack).config, stack);
  });

  it("is OK with no data at all: no alarm starts in ALARM, and none waits in INSUFFICIENT_DATA", () => {
    const metric = ofType(run, "aws:cloudwatch/metricAlarm:MetricAlarm").map((r) => inputs(r));
    const composite = ofType(run, "aws:cloudwatch/compositeAlarm:CompositeAlarm").map((r) => inputs(r));
    const states: Record<string, State> = {};
    for (const alarm of metric) {
      // Metric math would make the state depend on what CloudWatch does with an empty series: none is used.
      expect(alarm.metricQueries, alarm.name).toBeUndefined();
      states[alarm.name] = metricAlarmState(
        alarm as MetricAlarmDefinition,
        new Map(),
        Date.parse("2026-11-01T10:00:00Z") / 1000,
      );
    }
    for (const alarm of composite) states[alarm.alarmName] = ruleIsTrue(alarm.alarmRule, states) ? "ALARM" : "OK";
    expect(Object.entries(states).filter(([, s]) => s !== "OK")).toEqual([]);
    // The dead letters, messages set aside, the composite and its two conditions.
    expect(metric.length).toBe(4);
    expect(composite).toHaveLength(1);
  });
});
