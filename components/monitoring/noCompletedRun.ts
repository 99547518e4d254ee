/**
 * The "no completed run within N hours" alarm: ALARM(failed) AND NOT ALARM(completed), over two silent metric alarms on
 * RunsCompleted (core/metrics.ts; 1 completed, 0 any other end): "completed" (Maximum >= 1 in the last N hours) and
 * "failed" (Minimum < 1 in the last 168 hours). Missing data is not breaching, so a new stack is OK until a run ends
 * without completing, and only a completed run clears it.
 */
import { ALL_REGIONS, METRICS, METRIC_DIMENSIONS, METRIC_NAMESPACE } from "../../core/metrics";

const HOUR = 3600;
/** How far back "failed" looks: the longest an alarm can evaluate (7 days of hourly periods), and N's upper bound. */
export const FAILED_WITHIN_HOURS = 168;

export interface NoCompletedRunInput {
  /** Physical base name of the stack's alarms. */
  baseName: string;
  jobName: string;
  environment: string;
  hours: number;
}

/** A condition on the task's run-level RunsCompleted, per hour: true (ALARM) on one datapoint, no actions. */
function runsCompleted(jobName: string, statistic: "Maximum" | "Minimum") {
  return {
    namespace: METRIC_NAMESPACE,
    metricName: METRICS.completed,
    dimensions: { [METRIC_DIMENSIONS.jobName]: jobName, [METRIC_DIMENSIONS.region]: ALL_REGIONS },
    statistic,
    period: HOUR,
    datapointsToAlarm: 1,
    threshold: 1,
    treatMissingData: "notBreaching",
    actionsEnabled: false,
  };
}

/** The alarms' names: the composite's, and its two conditions'. */
export function noCompletedRunNames(input: Pick<NoCompletedRunInput, "baseName" | "hours">) {
  return {
    alarm: `${input.baseName} no run completed within ${input.hours} hours`,
    completed: `${input.baseName} condition: a run completed within ${input.hours} hours`,
    failed: `${input.baseName} condition: a run ended without completing within ${FAILED_WITHIN_HOURS / 24} days`,
  };
}

/** The two conditions (metric alarms without actions) and the composite alarm (without its actions). */
export function noCompletedRunAlarms(input: NoCompletedRunInput) {
  const { hours } = input;
  const names = noCompletedRunNames(input);
  const condition = `A condition of the alarm '${names.alarm}', which notifies; this one has no actions, and its ALARM state means true.`;
  return {
    completed: {
      name: names.completed,
      alarmDescription: `${condition} True while a run of export job ${input.jobName} (${input.environment}) completed within the last ${hours} hours (${METRIC_NAMESPACE} ${METRICS.completed} = 1).`,
      ...runsCompleted(input.jobName, "Maximum"),
      evaluationPeriods: hours,
      comparisonOperator: "GreaterThanOrEqualToThreshold",
    },
    failed: {
      name: names.failed,
      alarmDescription: `${condition} True while a run of export job ${input.jobName} (${input.environment}) ended without completing within the last ${FAILED_WITHIN_HOURS / 24} days (${METRIC_NAMESPACE} ${METRICS.completed} = 0).`,
      ...runsCompleted(input.jobName, "Minimum"),
      evaluationPeriods: FAILED_WITHIN_HOURS,
      comparisonOperator: "LessThanThreshold",
    },
    alarm: {
      alarmName: names.alarm,
      alarmRule: `ALARM("${names.failed}") AND NOT ALARM("${names.completed}")`,
      alarmDescription:
        `No run of export job ${input.jobName} (${input.environment}) reached ExecutionCompleted within ${hours} hours, and a run ended without completing. ` +
        `A new stack is not in ALARM: it waits for a run to end. Look for failure alerts, the schedule's state and its dead-letter alarm.`,
    },
  };
}
