/**
 * The exit codes of `hub-export run` (the container's command) and what each means to an operator: the task, the CLI
 * the failure alerts and `hub-export run-now --wait` all use this table.
 */
export const EXIT_CODES = {
  completed: 0,
  /** Refused before touching data (bad configuration, another run holds the lock), or stopped mid-way. */
  refusedOrStopped: 1,
  usage: 2,
  executionFailed: 3,
  internal: 70,
} as const;

export const EXIT_MEANINGS: Record<number, string> = {
  [EXIT_CODES.completed]: "ExecutionCompleted",
  [EXIT_CODES.refusedOrStopped]:
    "refused before touching any data, or stopped mid-way (the next run resumes its transaction)",
  [EXIT_CODES.usage]: "usage error: the task's command line is wrong (the task definition)",
  [EXIT_CODES.executionFailed]:
    "ExecutionFailed: some messages were not published (reasons in the STATUS table); the next run retries them",
  [EXIT_CODES.internal]: "internal error (a bug): the log holds the stack trace; the next run resumes the transaction",
};

/** Killed by SIGTERM (128 + 15): ECS's stop reached the task before it could handle the signal (it starts up). */
export const SIGTERM_EXIT = 143;

export function exitMeaning(code: number): string {
  if (code === SIGTERM_EXIT)
    return "stopped by SIGTERM while starting, before the run began (the next run does the work)";
  return EXIT_MEANINGS[code] ?? (code > 128 ? `killed by signal ${code - 128}` : `unexpected exit code ${code}`);
}

/**
 * ECS's stop codes of a task it stopped itself (with SIGTERM, then SIGKILL after the stop timeout): an operator's
 * StopTask, a service or deployment, a Fargate retirement or Spot interruption.
 */
export const ECS_STOP_CODES = [
  "UserInitiated",
  "ServiceSchedulerInitiated",
  "SpotInterruption",
  "TerminationNotice",
] as const;

/** A task that ECS stopped and that stopped cleanly (exit 1 with a Stopped row, or 143 before the run began). */
export function stoppedByEcs(exitCode: number, stopCode: string | undefined): boolean {
  return (
    (exitCode === EXIT_CODES.refusedOrStopped || exitCode === SIGTERM_EXIT) &&
    (ECS_STOP_CODES as readonly string[]).includes(stopCode ?? "")
  );
}
