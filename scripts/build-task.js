#!/usr/bin/env node
// Bundles the export task alone (cli/container.ts runs only the `run` command) into dist/task/index.js: one CommonJS
// file for the image's Node.js major (scripts/image-node.js), its dependencies inside, so the image needs no
// node_modules. `node scripts/build-task.js [--outdir DIR]`; tests call buildTask({ outdir }). bundleInputs() lists the
// bundle's files from esbuild's own metafile: the image's rebuild trigger hashes exactly those.
"use strict";
const path = require("node:path");

const { imageNode } = require("./image-node");

const ROOT = path.resolve(__dirname, "..");

/** The one set of esbuild options: the bundle and the list of its inputs come from the same build. */
function bundleOptions(outdir, minify = true) {
  return {
    absWorkingDir: ROOT,
    entryPoints: [path.join(ROOT, "cli", "container.ts")],
    outfile: path.join(outdir, "index.js"),
    bundle: true,
    platform: "node",
    target: `node${imageNode(ROOT).major}`,
    format: "cjs",
    // pg loads pg-native only when asked for; the task never asks.
    external: ["pg-native"],
    minify,
    keepNames: true,
    sourcemap: "linked",
    legalComments: "linked",
    logLevel: "warning",
    metafile: true,
  };
}

/** @param {{ outdir?: string, minify?: boolean }} [options] */
async function buildTask(options = {}) {
  const esbuild = require("esbuild");
  const outdir = path.resolve(options.outdir ?? path.join(ROOT, "dist", "task"));
  const result = await esbuild.build(bundleOptions(outdir, options.minify ?? true));
  const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
  return { outfile: path.join(outdir, "index.js"), bytes };
}

/**
 * Every source file of the bundle, relative to the project root with forward slashes, sorted: the project's modules
 * and the dependencies' files alike. Synchronous and without writing (the Pulumi program calls it).
 */
function bundleInputs() {
  const esbuild = require("esbuild");
  const result = esbuild.buildSync({ ...bundleOptions(path.join(ROOT, "dist", "task"), false), write: false });
  // esbuild names inputs relative to absWorkingDir; namespaced ones (`(disabled):x`) are not files.
  return Object.keys(result.metafile.inputs)
    .filter((input) => !/^[a-z-]*\(?[a-z]+\)?:/i.test(input))
    .map((input) => input.split(path.sep).join("/"))
    .sort();
}

module.exports = { buildTask, bundleInputs, bundleOptions };

if (require.main === module) {
  const i = process.argv.indexOf("--outdir");
  buildTask({ outdir: i > 0 ? process.argv[i + 1] : undefined }).then(
    ({ outfile, bytes }) =>
      process.stdout.write(
        `built ${path.relative(process.cwd(), outfile)} (${(bytes / 1024 / 1024).toFixed(1)} MB with its map)\n`,
      ),
    (err) => {
      process.stderr.write(`build-task: ${err && err.message ? err.message : err}\n`);
      process.exitCode = 1;
    },
  );
}
