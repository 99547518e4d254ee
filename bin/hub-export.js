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

const fs = require("node:fs");
const path = require("node:path");
const { loadCli, BuildError } = require("../scripts/build-cli.js");

const ROOT = path.resolve(__dirname, "..");

/**
 * A package of package.json's that is not installed (`npx hub-export` before `npm ci`, or an install that stopped
 * half-way): what the user must fix, not a bug. Undefined for any other error, a missing module of ours included.
 */
function notInstalled(err) {
  const missing = err && err.code === "MODULE_NOT_FOUND" && /Cannot find module '([^']+)'/.exec(err.message);
  const name = missing ? missing[1] : undefined;
  if (!name || name.startsWith(".") || path.isAbsolute(name)) return undefined;
  const pkg = name
    .split("/")
    .slice(0, name.startsWith("@") ? 2 : 1)
    .join("/");
  const manifest = require("../package.json");
  const lists = [manifest.dependencies, manifest.devDependencies, manifest.optionalDependencies];
  const declared = lists.some((deps) => deps && pkg in deps);
  return declared ? pkg : undefined;
}

/** A missing install: one line, exit 1 (a problem to fix, named), never the internal error's stack trace. */
function needsInstall(pkg) {
  const line = `the project's dependencies are not installed (no ${pkg} in node_modules): run npm ci first, in ${ROOT}`;
  process.stderr.write(`hub-export: ${line}\n`);
  exit(1);
}

/** Exit 70 (EX_SOFTWARE): a bug, never something the input caused; or the missing install it really is. */
function fail(err, internal) {
  const pkg = notInstalled(err);
  if (pkg) return needsInstall(pkg);
  process.stderr.write(`hub-export: ${internal(err)}\n`);
  exit(70);
}

const bug = (text) =>
  `internal error (a bug; please report it with this output, run again with NODE_OPTIONS=--enable-source-maps for the sources' lines): ${text}`;
const stack = (err) => String(err && err.stack ? err.stack : err);

// The project's own node_modules, not one Node would find in a folder above the checkout.
if (!fs.existsSync(path.join(ROOT, "node_modules", "esbuild"))) {
  needsInstall("esbuild");
} else {
  loadCli().then(
    (cli) => cli.main(process.argv.slice(2)).then(exit, (err) => fail(err, (e) => bug(cli.redactLines(stack(e))))),
    (err) => fail(err, (e) => (e instanceof BuildError ? e.message : bug(stack(e)))),
  );
}
