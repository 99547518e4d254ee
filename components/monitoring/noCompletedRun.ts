/**
 * The "no completed run within N hours" alarm, as a pure definition. It watches the task's own RunsCompleted metric
 * (Sum per hour) through a metric math expression that is defined for every hour:
 *
 *   IF(EPOCH(completed) < <watch start>, 1, FILL(completed, 0))
 *
 * An hour that began before the watch started counts as completed; after it, an hour without a completed run counts
 * 0 (missing data is silence, so a schedule that never starts the task still fires it). The alarm fires when all of
 * the last N hours are below 1. N is at least the schedule's longest gap between two starts (plus a quarter), so the
 * first N hours after the watch starts always hold the first scheduled run: the alarm never fires before that run
 * has had its chance, and fires N hours after the last completed run otherwise.
 */
import { ALL_REGIONS, METRICS, METRIC_DIMENSIONS, METRIC_NAMESPACE } from "../../core/metrics";

/** The id of the metric query the expression reads. */
export const COMPLETED_QUERY = "completed";
const HOUR = 3600;

export interface NoCompletedRunInput {
  /** Physical base name of the stack's alarms. */
  baseName: string;
  jobName: string;
  environment: string;
  hours: number;
  /** When the watch started (RFC 3339): the creation of the stack's task role, which the schedule's first run needs. */
  watchStart: string;
}

/** Seconds since the epoch of an RFC 3339 time, or a clear error. */
export function epochSeconds(time: string): number {
  const ms = Date.parse(time);
  if (Number.isNaN(ms)) throw new Error(`not a date-time: ${JSON.stringify(time)}`);
  return Math.floor(ms / 1000);
}

export function noCompletedRunExpression(watchStart: string): string {
  return `IF(EPOCH(${COMPLETED_QUERY}) < ${epochSeconds(watchStart)}, 1, FILL(${COMPLETED_QUERY}, 0))`;
}

/** The alarm's arguments (without its actions). */
export function noCompletedRunAlarm(input: NoCompletedRunInput) {
  const { hours } = input;
  return {
    name: `${input.baseName} no completed run within ${hours} hours`,
    alarmDescription:
      `No run of export job ${input.jobName} (${input.environment}) reached ExecutionCompleted within ${hours} hours (metric ${METRIC_NAMESPACE} ${METRICS.completed}). ` +
      `It does not fire before the first scheduled run has had its chance: hours before ${new Date(epochSeconds(input.watchStart) * 1000).toISOString()} (when the watch started) count as completed, and ${hours} hours hold at least one scheduled start. ` +
      `Look for failure alerts, the schedule's state and its dead-letter alarm.`,
    metricQueries: [
      {
        id: COMPLETED_QUERY,
        returnData: false,
        metric: { namespace: METRIC_NAMESPACE, metricName: METRICS.completed, dimensions: { [METRIC_DIMENSIONS.jobName]: input.jobName, [METRIC_DIMENSIONS.region]: ALL_REGIONS }, stat: "Sum", period: HOUR },
      },
      { id: "watched", returnData: true, label: "Completed runs per hour (1 before the watch started)", expression: noCompletedRunExpression(input.watchStart) },
    ],
    evaluationPeriods: hours,
    datapointsToAlarm: hours,
    threshold: 1,
    comparisonOperator: "LessThanThreshold",
    // The expression has a value for every hour; should CloudWatch lack one, it counts as silence.
    treatMissingData: "breaching",
  };
}
