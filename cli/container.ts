/**
 * The container's entry (bundled to dist/task/index.js): `node index.js run --definition ... --scripts ...`.
 * It runs the `run` command alone, so the bundle holds only the task, and maps errors as the CLI does.
 */
import runCommand from "./commands/run";
import { executeCommand } from "./command";
import { EXIT } from "../core/exitCodes";
import { redactLines } from "../core/redact";

export async function main(argv: string[]): Promise<number> {
  try {
    return await executeCommand("run", runCommand, argv[0] === "run" ? argv.slice(1) : argv, process);
  } catch (err) {
    process.stderr.write(`hub-export run: internal error: ${redactLines(String((err as Error)?.stack ?? err))}\n`);
    return EXIT.internal;
  }
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
