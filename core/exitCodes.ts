/**
 * The one table of exit codes: `hub-export` (every command's help, the top-level help and the README's table, checked
 * by test/cli/help.test.ts), the export task (`hub-export run` in the container), its failure alerts and
 * `hub-export run-now --wait`.
 */
export const EXIT = {
  ok: 0,
  /** A problem to fix: bad input (config, files, credentials), a run refused or stopped, a system that refused. */
  failed: 1,
  /** Wrong command-line usage. */
  usage: 2,
  /** The export run ended ExecutionFailed. */
  executionFailed: 3,
  /** A bug: an error the code did not expect (EX_SOFTWARE). */
  internal: 70,
  /** `run-now --wait` gave up following (as timeout(1) does); the task itself keeps running. */
  followTimeout: 124,
  /** `local` interrupted by Ctrl-C: 128 + SIGINT, as shells report it (local/interrupt.ts). */
  interrupted: 130,
  /** Killed by SIGTERM (128 + 15): ECS's stop reached the task before it could handle the signal (it starts up). */
  sigterm: 143,
} as const;

/** What each code means to a user of `hub-export`: the top-level help and the README's table say exactly this. */
export const EXIT_MEANINGS: Record<number, string> = {
  [EXIT.ok]: "success",
  [EXIT.failed]:
    "a problem to fix, named in the message: bad config or input, a run refused or stopped (the next run resumes it), a system that is unreachable or refuses",
  [EXIT.usage]: "wrong usage: an unknown option, a missing or malformed value (one line, with --help for the options)",
  [EXIT.executionFailed]:
    "run, local (npm start) and run-now --wait: the export run ended ExecutionFailed; the next run retries its failed messages",
  [EXIT.internal]: "internal error: a bug, not something the input caused; please report it with the output",
  [EXIT.followTimeout]: "run-now --wait: --timeout ended the wait; the task keeps running",
  [EXIT.interrupted]:
    "local (npm start) interrupted by Ctrl-C (143: by SIGTERM): the run stopped in order and the next start resumes it",
};

/** `0   success` … for the codes every command has (0, 1, 2, 70), with a command's own codes and meanings merged in. */
export function exitCodeLines(own: Record<number, string> = {}): string[] {
  const common = [EXIT.ok, EXIT.failed, EXIT.usage, EXIT.internal].map((c) => [c, EXIT_MEANINGS[c]] as const);
  const all: Record<number, string> = { ...Object.fromEntries(common), ...own };
  return Object.keys(all)
    .map(Number)
    .sort((a, b) => a - b)
    .map((code) => `${String(code).padEnd(3)} ${all[code]}`);
}

/** What the export task's exit code means to an operator (the failure alerts, `run-now --wait`). */
export const TASK_EXIT_MEANINGS: Record<number, string> = {
  [EXIT.ok]: "ExecutionCompleted",
  [EXIT.failed]: "refused before touching any data, or stopped mid-way (the next run resumes its transaction)",
  [EXIT.usage]: "usage error: the task's command line is wrong (the task definition)",
  [EXIT.executionFailed]:
    "ExecutionFailed: some messages were not published (reasons in the STATUS table); the next run retries them",
  [EXIT.internal]: "internal error (a bug): the log holds the stack trace; the next run resumes the transaction",
};

export function exitMeaning(code: number): string {
  if (code === EXIT.sigterm)
    return "stopped by SIGTERM while starting, before the run began (the next run does the work)";
  return TASK_EXIT_MEANINGS[code] ?? (code > 128 ? `killed by signal ${code - 128}` : `unexpected exit code ${code}`);
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
    (exitCode === EXIT.failed || exitCode === EXIT.sigterm) &&
    (ECS_STOP_CODES as readonly string[]).includes(stopCode ?? "")
  );
}
