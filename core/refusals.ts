/**
 * Errors of a foreign state, never of our code: the machine refused (a full disk, a permission, a missing binary, a
 * refused connection) or the database did (a shared table with other columns or types, a constraint, a privilege).
 * Each becomes a user error (exit 1) that names the thing and says what to do; exit 70 stays for bugs. Pure.
 */
import path from "node:path";
import { UserError } from "./errors";

/** The name a dynamic provider gives a refusal: its serialized code cannot capture the UserError class. */
export const USER_ERROR_NAME = "UserError";

/**
 * `err` as the user error it is, or undefined for a bug: a UserError; an Error named UserError (a provider's
 * refusal); a refusal of the machine (systemRefusal) or of the database (databaseRefusal).
 */
export function asUserError(err: unknown): UserError | undefined {
  if (err instanceof UserError) return err;
  if (err instanceof Error && err.name === USER_ERROR_NAME) return new UserError(err.message.split("\n"));
  const line = systemRefusal(err) ?? databaseRefusal(err);
  if (line !== undefined) return new UserError(line);
  // A provider's message around the database's answer (its cause): the message names the thing, the answer says what to do.
  const advice = err instanceof Error ? databaseAdvice(err.cause) : undefined;
  return advice === undefined ? undefined : new UserError(`${(err as Error).message}: ${advice}`);
}

/** What a file system error means and what to do, by errno code. */
const FILE_ADVICE: Record<string, (where: string) => string> = {
  ENOSPC: (where) =>
    `no space left on the device: free space in ${where} (the data written so far is kept), then run again`,
  EDQUOT: (where) => `the disk quota is used up: free space in ${where} or raise the quota, then run again`,
  EFBIG: (where) =>
    `the file is over the size limit (ulimit -f) or the disk is full: raise the limit or free space in ${where}, then run again`,
  EACCES: (where) => `permission denied: give this user access to ${where}, or run as its owner`,
  EPERM: (where) => `operation not permitted: give this user access to ${where}, or run as its owner`,
  EROFS: (where) => `the file system is read-only: make ${where} writable, or choose another folder`,
  EMFILE: () => "too many open files: raise the limit (ulimit -n), then run again",
  ENFILE: () => "the system has too many open files: close some programs, then run again",
  ENOTDIR: (where) => `a file is in the way of a folder: move it from ${where}`,
  EISDIR: (where) => `a folder is in the way of a file: move it from ${where}`,
};

/** Socket errors of a system that cannot be reached. */
const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/**
 * One line for an error of a system call (a file, a process, a socket) that the machine refused, or undefined. A
 * missing binary (spawn ENOENT) is named with how to get it.
 */
export function systemRefusal(err: unknown): string | undefined {
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number; hostname?: string; dest?: string };
  if (!(e instanceof Error) || typeof e.code !== "string" || typeof e.syscall !== "string") return undefined;
  if (e.syscall.startsWith("spawn")) {
    const binary = e.path ?? e.syscall.slice("spawn ".length);
    return e.code === "ENOENT"
      ? `cannot run ${binary}: it is not installed or not on the PATH (${e.code}); install it, or 'npm ci' for the project's own`
      : `cannot run ${binary} (${e.code}): ${e.message}`;
  }
  if (UNREACHABLE.has(e.code)) {
    const target = e.address ? `${e.address}${e.port ? `:${e.port}` : ""}` : (e.hostname ?? "the server");
    return `cannot reach ${target} (${e.code}): check that it runs and accepts connections from here, then run again`;
  }
  const advice = FILE_ADVICE[e.code];
  if (!advice) return undefined;
  const file = e.dest ?? e.path;
  const where = file ? path.dirname(file) : "the folder written to";
  return `${file ? `${e.syscall} ${file}` : e.syscall}: ${advice(where)}`;
}

/**
 * Runs `work` on `file`; a system error without a path (a write on an open file has none) gets `file`'s, so that its
 * message names the file.
 */
export function onFile<T>(file: string, work: () => T): T {
  try {
    return work();
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e instanceof Error && typeof e.code === "string" && e.path === undefined) e.path = file;
    throw err;
  }
}

/** SQLSTATE patterns (the first match wins) of a database refusal, not of a statement we got wrong, with what to do. */
const SQLSTATE_ADVICE: Record<string, string> = {
  "^08": "the connection to the database failed: check that it runs and accepts connections from here, then run again",
  "^22": "a value in the database does not fit what the project reads or writes: correct the row named, then run again",
  "^23502$":
    "a column is NOT NULL without a default, and the project does not write it: give it a default or drop its NOT NULL (ALTER TABLE ... ALTER COLUMN ...), then run again",
  "^23":
    "a constraint of the table refuses the row: look at the constraint named (another team's addition?), then run again",
  "^25006$":
    "the database is read-only (a standby or a read-only transaction mode): point the connection at the primary",
  "^28": "the database refused the login: check the user and password of the connection",
  "^3D": "the database does not exist: check the connection's database name, or create it ('pulumi up' does)",
  "^3F": "the schema does not exist: check the schema names of the stack, or create it ('pulumi up' does)",
  "^40": "the database rolled the statement back (a deadlock or a conflict with another session): run again",
  "^42501$":
    "the login lacks a privilege on the object named: grant it ('pulumi up' grants the task's), then run again",
  "^42P01$":
    "a table the project needs is missing: create it ('pulumi up' applies the baseline), or check the schema names",
  "^(42703|42804|42846|42883|42809)$":
    "a table the project shares has other columns or types than it needs (changed by another team?): put the column back as the baseline defines it, then run again",
  "^53100$": "the database's disk is full: free space on the database server, then run again",
  "^53": "the database is out of a resource (memory, connections): try again later, or raise its limits",
  "^54": "a row is over a limit of the database: correct the row named, then run again",
  "^55": "an object is locked or in use by another session: run again once it is free",
  "^57": "the database ended the statement (an administrator, a shutdown or a timeout): run again",
  "^58": "the database server failed to read or write its files: check the server's disk and log",
};

/**
 * One line for an error the database answered (a node-postgres DatabaseError: a severity and a SQLSTATE) that a
 * foreign state causes, naming the table and column when the server says them; undefined for others (a syntax error,
 * an internal error: a bug of ours).
 */
export function databaseRefusal(err: unknown): string | undefined {
  const advice = databaseAdvice(err);
  if (!advice) return undefined;
  const e = err as Error & { code: string; schema?: string; table?: string; column?: string; constraint?: string };
  const table = e.table ? `${e.schema ? `${e.schema}.` : ""}${e.table}` : undefined;
  const named = [
    table && `table ${table}${e.column ? `, column ${e.column}` : ""}`,
    e.constraint && `constraint ${e.constraint}`,
  ]
    .filter(Boolean)
    .join(", ");
  return `the database refused: ${String(e.message).split("\n")[0]} (SQLSTATE ${e.code}${named ? `; ${named}` : ""}): ${advice}`;
}

/** What to do about a refusal the database answered (a node-postgres DatabaseError), or undefined (not one, or a bug). */
function databaseAdvice(err: unknown): string | undefined {
  const e = err as { code?: unknown; severity?: unknown };
  if (
    !(err instanceof Error) ||
    typeof e.code !== "string" ||
    !/^[0-9A-Z]{5}$/.test(e.code) ||
    typeof e.severity !== "string"
  )
    return undefined;
  return Object.entries(SQLSTATE_ADVICE).find(([pattern]) => new RegExp(pattern).test(e.code as string))?.[1];
}
