/**
 * An error caused by the user's input (config, template, credentials, a reachable-but-refusing system). The CLI
 * prints its lines without a stack trace and exits 1. Messages never carry secret values.
 */
export class UserError extends Error {
  readonly lines: string[];
  constructor(lines: string | string[]) {
    const list = Array.isArray(lines) ? lines : [lines];
    super(list.join("\n"));
    this.name = "UserError";
    this.lines = list;
  }
}

/** Wrong command-line usage: exit 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

export function isUserError(err: unknown): err is UserError {
  return err instanceof UserError;
}
