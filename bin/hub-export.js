#!/usr/bin/env node
// Runs the command from a bundle of its TypeScript sources, built on first use and whenever a source changes
// (scripts/build-cli.js), so it works right after `npm ci` with no build step and writes nothing to the system's
// temporary folder.
"use strict";

// Exit explicitly (a command may leave handles open, e.g. a pool's idle timer), but only once stdout and stderr have
// flushed: a large --json output to a pipe is written asynchronously.
function exit(code) {
  process.exitCode = code;
  let pending = 2;
  const done = () => --pending === 0 && process.exit(code);
  process.stdout.write("", done);
  process.stderr.write("", done);
}

// The AWS SDK warns, on every command that loads it, that its releases after January 2027 will need Node 22: the
// project pins its SDK versions and supports Node 20 (package.json engines), so the warning tells a user nothing to do.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

const { loadCli, BuildError } = require("../scripts/build-cli.js");

loadCli().then(
  (cli) =>
    cli.main(process.argv.slice(2)).then(exit, (err) => {
      // Exit 70 (EX_SOFTWARE): a bug, never something the input caused (that is exit 1 or 2, with a one-line message).
      process.stderr.write(`hub-export: internal error (a bug; please report it with this output): ${cli.redactLines(String(err && err.stack ? err.stack : err))}\n`);
      exit(70);
    }),
  (err) => {
    process.stderr.write(`hub-export: ${err instanceof BuildError ? err.message : `internal error (a bug; please report it with this output): ${err && err.stack ? err.stack : err}`}\n`);
    exit(70);
  },
);
