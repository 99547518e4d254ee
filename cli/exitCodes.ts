import { EXIT_CODES } from "../core/exitCodes";

/** The exit codes of `hub-export` (numbers from core/exitCodes.ts): one table for the code, every command's help and the README. */
export const EXIT = {
  ok: EXIT_CODES.completed,
  /** Bad input (config, files, credentials), a refused or stopped run, a system that refused. */
  failed: EXIT_CODES.refusedOrStopped,
  /** Wrong command-line usage. */
  usage: EXIT_CODES.usage,
  /** The export task ended ExecutionFailed (`run`). */
  executionFailed: EXIT_CODES.executionFailed,
  /** A bug: an error the code did not expect (EX_SOFTWARE). */
  internal: EXIT_CODES.internal,
  /** `local` interrupted by Ctrl-C: 128 + SIGINT, as shells report it (143 for SIGTERM; local/interrupt.ts). */
  interrupted: 130,
} as const;

/** What `local` exiting EXIT.interrupted means (its help, the top-level help and the README say the same). */
export const INTERRUPTED_MEANING =
  "local: interrupted by Ctrl-C (143: by SIGTERM); the run stopped in order and the next start resumes it";

const COMMON: Record<number, string> = {
  [EXIT.ok]: "success",
  [EXIT.failed]:
    "a problem to fix: the message names it (bad config or input, a refused run, an unreachable or refusing system)",
  [EXIT.usage]: "wrong usage: an unknown option, a missing or malformed value",
  [EXIT.internal]: "internal error: a bug, not something the input caused; please report it with the output",
};

/** `0  success` … for the codes every command has, with a command's own meanings and extra codes merged in. */
export function exitCodeLines(own: Record<number, string> = {}): string[] {
  const all = { ...COMMON, ...own };
  return Object.keys(all)
    .map(Number)
    .sort((a, b) => a - b)
    .map((code) => `${String(code).padEnd(3)} ${all[code]}`);
}
