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
  [EXIT_CODES.refusedOrStopped]: "refused before touching any data, or stopped mid-way (the next run resumes its transaction)",
  [EXIT_CODES.usage]: "usage error: the task's command line is wrong (the task definition)",
  [EXIT_CODES.executionFailed]: "ExecutionFailed: some messages were not published (reasons in the STATUS table); the next run retries them",
  [EXIT_CODES.internal]: "internal error (a bug): the log holds the stack trace; the next run resumes the transaction",
};

export function exitMeaning(code: number): string {
  return EXIT_MEANINGS[code] ?? (code > 128 ? `killed by signal ${code - 128}` : `unexpected exit code ${code}`);
}
