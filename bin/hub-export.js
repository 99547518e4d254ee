#!/usr/bin/env node
// Runs the TypeScript sources directly, so the command works right after `npm ci` with no build step.
"use strict";
require("tsx/cjs");

// Exit explicitly (a command may leave handles open, e.g. a pool's idle timer), but only once stdout and stderr have
// flushed: a large --json output to a pipe is written asynchronously.
function exit(code) {
  process.exitCode = code;
  let pending = 2;
  const done = () => --pending === 0 && process.exit(code);
  process.stdout.write("", done);
  process.stderr.write("", done);
}

require("../cli/main.ts").main(process.argv.slice(2)).then(exit, (err) => {
  // Exit 70 (EX_SOFTWARE): a bug, never something the input caused (that is exit 1 or 2, with a one-line message).
  const { redactLines } = require("../core/redact.ts");
  process.stderr.write(`hub-export: internal error (a bug; please report it with this output): ${redactLines(String(err && err.stack ? err.stack : err))}\n`);
  exit(70);
});
