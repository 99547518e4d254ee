/**
 * The container's entry (bundled to dist/task/index.js): `node index.js run --definition ... --scripts ...`.
 * It runs the `run` command alone, so the bundle holds only the task, and maps errors as the CLI does.
 */
import runCommand from "../cli/commands/run";
import { parseCommandArgs } from "../cli/command";
import { UsageError, isUserError } from "../core/errors";

export async function main(argv: string[]): Promise<number> {
  const args = argv[0] === "run" ? argv.slice(1) : argv;
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(`${runCommand.summary}\n\nUsage: ${runCommand.usage}\n`);
    return 0;
  }
  try {
    const { values, positionals } = parseCommandArgs(runCommand, args);
    return await runCommand.run(values, process, positionals);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`hub-export run: ${err.message}\nUsage: ${runCommand.usage}\n`);
      return 2;
    }
    if (isUserError(err)) {
      for (const line of err.lines) process.stderr.write(line + "\n");
      return 1;
    }
    process.stderr.write(`hub-export run: internal error: ${(err as Error)?.stack ?? err}\n`);
    return 70;
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
