/**
 * How long a run of the export task may last, and how it is stopped (task/README.md, "Stopping"). ECS stops a task
 * with SIGTERM and kills it STOP_TIMEOUT_SECONDS later; the task stops itself within STOP_GRACE_SECONDS. A run also
 * stops at its deadline, by default before the schedule's next start: deadline + stop timeout = the schedule's period,
 * so the next run finds the client's lock free and resumes the transaction. Pure.
 */
import { schedulePeriodHours } from "./schedulePeriod";

/** Seconds between SIGTERM and SIGKILL (the container's stopTimeout): the Fargate maximum. */
export const STOP_TIMEOUT_SECONDS = 120;
/** From SIGTERM to the task's exit at the latest: well inside the stop timeout, so the exit is the task's own. */
export const STOP_GRACE_SECONDS = 90;

/** The container's environment: the stack's schedule expression (components/task/exportTask.ts). */
export const SCHEDULE_ENV = "HUB_EXPORT_SCHEDULE";
/** Overrides the run deadline (seconds). */
export const RUN_DEADLINE_ENV = "HUB_EXPORT_RUN_DEADLINE_SECONDS";
/** Overrides the grace period after SIGTERM (seconds; at most STOP_GRACE_SECONDS is sensible under ECS). */
export const STOP_GRACE_ENV = "HUB_EXPORT_STOP_GRACE_SECONDS";

/** The period assumed when the schedule has none that can be derived (at(...), L, W, #) or none is given: a day. */
const FALLBACK_PERIOD_HOURS = 24;

/** The schedule's period less the stop timeout (at least half the period), in whole seconds. */
export function defaultRunDeadlineSeconds(schedule?: string): number {
  const period = ((schedule && schedulePeriodHours(schedule)) || FALLBACK_PERIOD_HOURS) * 3600;
  return Math.round(Math.max(period - STOP_TIMEOUT_SECONDS, period / 2));
}
