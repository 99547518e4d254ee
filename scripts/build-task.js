#!/usr/bin/env node
// Bundles the export task alone (task/main.ts) into dist/task/index.js: one CommonJS file for Node 20, with its
// dependencies (pg, undici, pino, zod, the AWS SDK clients) inside, so the image needs no node_modules.
// `node scripts/build-task.js [--outdir DIR]`; tests call buildTask({ outdir }).
"use strict";
const path = require("node:path");

const ROOT = path.resolve(__dirname, "..");

/** @param {{ outdir?: string, minify?: boolean }} [options] */
async function buildTask(options = {}) {
  const esbuild = require("esbuild");
  const outdir = path.resolve(options.outdir ?? path.join(ROOT, "dist", "task"));
  const result = await esbuild.build({
    entryPoints: [path.join(ROOT, "task", "main.ts")],
    outfile: path.join(outdir, "index.js"),
    bundle: true,
    platform: "node",
    target: "node20",
    format: "cjs",
    // pg loads pg-native only when asked for; the task never asks.
    external: ["pg-native"],
    minify: options.minify ?? true,
    keepNames: true,
    sourcemap: "linked",
    legalComments: "linked",
    logLevel: "warning",
    metafile: true,
  });
  const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
  return { outfile: path.join(outdir, "index.js"), bytes };
}

module.exports = { buildTask };

if (require.main === module) {
  const i = process.argv.indexOf("--outdir");
  buildTask({ outdir: i > 0 ? process.argv[i + 1] : undefined }).then(
    ({ outfile, bytes }) => process.stdout.write(`built ${path.relative(process.cwd(), outfile)} (${(bytes / 1024 / 1024).toFixed(1)} MB with its map)\n`),
    (err) => {
      process.stderr.write(`build-task: ${err && err.message ? err.message : err}\n`);
      process.exitCode = 1;
    },
  );
}
