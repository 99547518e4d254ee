/**
 * The `hub-export` command in a test: in-process through `main` (runMain: exit code, stdout and stderr, as a user sees
 * them), or as a user runs it, `node bin/hub-export.js ...` in a child process (runCli), for what only the real
 * launcher shows: the bundle, the missing-install message, signals, another working folder.
 */
import path from "node:path";
import { PassThrough } from "node:stream";
import { main } from "../../cli/main";
import { runProcess, type ProcessResult } from "./processes";

export const PROJECT_ROOT = path.resolve(__dirname, "..", "..");
export const BIN = path.join(PROJECT_ROOT, "bin", "hub-export.js");

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  input?: string;
  /** Set for the command's duration (undefined: unset). */
  env?: Record<string, string | undefined>;
}

/** `hub-export <args>` in this process. A bug's exception is rethrown, as the launcher would report it (exit 70). */
export async function runMain(args: string[], options: CliOptions = {}): Promise<CliResult> {
  const saved = Object.entries(options.env ?? {}).map(([key, value]) => {
    const before = process.env[key];
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
    return [key, before] as const;
  });
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  let err = "";
  stdout.on("data", (d: Buffer) => (out += d.toString()));
  stderr.on("data", (d: Buffer) => (err += d.toString()));
  const stdin = new PassThrough();
  stdin.end(options.input ?? "");
  try {
    const code = await main(args, { stdout, stderr, stdin });
    return { code, stdout: out, stderr: err };
  } finally {
    for (const [key, before] of saved.reverse()) {
      if (before === undefined) delete process.env[key];
      else process.env[key] = before;
    }
  }
}

/** `node bin/hub-export.js <args>` in a child process, from this checkout or a copy of it (`root`). */
export function runCli(
  args: string[],
  options: { input?: string; cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; root?: string } = {},
): Promise<ProcessResult> {
  const bin = options.root ? path.join(options.root, "bin", "hub-export.js") : BIN;
  return runProcess(process.execPath, [bin, ...args], {
    cwd: options.cwd ?? options.root ?? PROJECT_ROOT,
    env: { ...process.env, ...options.env },
    input: options.input,
    timeoutMs: options.timeoutMs,
  });
}
