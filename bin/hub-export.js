#!/usr/bin/env node
// Runs the TypeScript sources directly, so the command works right after `npm ci` with no build step.
"use strict";
require("tsx/cjs");
require("../cli/main.ts").main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (err) => { process.stderr.write(`hub-export: internal error: ${err && err.stack ? err.stack : err}\n`); process.exitCode = 70; },
);
