// The `hub-export` command runs from an esbuild bundle of cli/main.ts, rebuilt whenever one of its sources changes. It
// lives in node_modules/.cache/hub-export/<checkout>/, never in the system temporary folder (a transpiler's cache there
// holds world-readable copies of the sources); a read-only install builds it in memory on each call instead. Only the
// project's own sources are bundled (dependencies load from node_modules): a build takes a fraction of a second.
"use strict";
const crypto = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");
const Module = require("node:module");

const ROOT = path.resolve(__dirname, "..");
const ENTRY = path.join(ROOT, "cli", "main.ts");
/** Bundles older than this that the manifest no longer names are removed (a concurrent call may still be loading one). */
const STALE_BUNDLE_MS = 10 * 60_000;

/** The checkout's own folder in the shared cache. */
function cacheDir() {
  const checkout = crypto.createHash("sha256").update(ROOT).digest("hex").slice(0, 12);
  return path.join(ROOT, "node_modules", ".cache", "hub-export", `cli-${checkout}`);
}

// A bundled module's __dirname would be the bundle's folder: each source gets its own folder back, as a literal.
const sourceDirsPlugin = {
  name: "source-dirs",
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (args.path.split(path.sep).includes("node_modules")) return undefined;
      const text = await fs.promises.readFile(args.path, "utf8");
      const contents = text
        .replace(/\b__dirname\b/g, JSON.stringify(path.dirname(args.path)))
        .replace(/\b__filename\b/g, JSON.stringify(args.path));
      return { contents, loader: "ts" };
    });
  },
};

function bundleOptions(outfile) {
  return {
    absWorkingDir: ROOT,
    entryPoints: [ENTRY],
    outfile,
    bundle: true,
    packages: "external",
    platform: "node",
    target: `node${process.versions.node.split(".")[0]}`,
    format: "cjs",
    keepNames: true,
    sourcemap: "linked",
    logLevel: "silent",
    metafile: true,
    plugins: [sourceDirsPlugin],
  };
}

/** The fingerprint of the sources a bundle was made of (their contents, and this builder's). */
function fingerprint(inputs) {
  const hash = crypto.createHash("sha256").update(process.versions.node.split(".")[0]);
  for (const input of [...inputs, path.relative(ROOT, __filename)]) {
    hash.update(input).update("\0");
    try {
      hash.update(fs.readFileSync(path.join(ROOT, input)));
    } catch {
      hash.update("(missing)");
    }
    hash.update("\0");
  }
  return hash.digest("hex");
}

/** The manifest's bundle when every source it was made of is unchanged. */
function currentBundle(dir) {
  let manifest;
  try {
    manifest = JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8"));
  } catch {
    return null;
  }
  if (
    manifest.root !== ROOT ||
    !Array.isArray(manifest.inputs) ||
    fingerprint(manifest.inputs) !== manifest.fingerprint
  )
    return null;
  const bundle = path.join(dir, manifest.bundle);
  return fs.existsSync(bundle) ? bundle : null;
}

class BuildError extends Error {}

async function build(outfile, write) {
  const esbuild = require("esbuild");
  try {
    return await esbuild.build({ ...bundleOptions(outfile), write });
  } catch (err) {
    const messages =
      err && Array.isArray(err.errors) ? await esbuild.formatMessages(err.errors, { kind: "error" }) : [String(err)];
    throw new BuildError(`building the command from its sources failed:\n${messages.join("")}`);
  }
}

// Relative sources would resolve against the bundle's real path, which differs when node_modules is a link.
function absoluteSources(mapText, dir) {
  const map = JSON.parse(mapText);
  map.sources = map.sources.map((source) => path.resolve(dir, source));
  return JSON.stringify(map);
}

function writeAtomically(file, contents) {
  const temporary = `${file}.${process.pid}.${crypto.randomBytes(4).toString("hex")}`;
  fs.writeFileSync(temporary, contents, { mode: 0o600 });
  fs.renameSync(temporary, file);
}

/**
 * The bundle's path, built when missing or stale. Concurrent calls may build at once: each writes whole files under
 * names of their own and renames them into place, so a reader sees the old bundle or the new one, never half of one.
 */
async function ensureCliBundle(dir = cacheDir()) {
  const current = currentBundle(dir);
  if (current) return current;
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const result = await build(path.join(dir, "cli.js"), false);
  // The source files: namespaced inputs (`(disabled):x`) are not files.
  const inputs = Object.keys(result.metafile.inputs)
    .filter((input) => !input.includes(":"))
    .sort();
  const print = fingerprint(inputs);
  const name = `cli-${print.slice(0, 16)}.js`;
  for (const out of result.outputFiles) {
    const isMap = out.path.endsWith(".map");
    const text = isMap
      ? absoluteSources(out.text, dir)
      : out.text.replace(/\/\/# sourceMappingURL=cli\.js\.map/, `//# sourceMappingURL=${name}.map`);
    writeAtomically(path.join(dir, isMap ? `${name}.map` : name), text);
  }
  writeAtomically(
    path.join(dir, "manifest.json"),
    JSON.stringify({ root: ROOT, bundle: name, fingerprint: print, inputs }),
  );
  removeStaleBundles(dir, name);
  return path.join(dir, name);
}

function removeStaleBundles(dir, keep) {
  for (const file of fs.readdirSync(dir)) {
    if (!file.startsWith("cli-") || file.startsWith(keep)) continue;
    const full = path.join(dir, file);
    try {
      if (Date.now() - fs.statSync(full).mtimeMs > STALE_BUNDLE_MS) fs.rmSync(full, { force: true });
    } catch {
      // Removed by a concurrent call.
    }
  }
}

/** The bundle compiled without writing it anywhere: for an install whose cache folder cannot be written. */
async function inMemoryCli() {
  const filename = path.join(ROOT, "cli", "main.bundle.js");
  const result = await build(filename, false);
  const code = result.outputFiles.find((o) => !o.path.endsWith(".map")).text;
  const mod = new Module(filename, module);
  mod.filename = filename;
  mod.paths = Module._nodeModulePaths(path.dirname(filename));
  mod._compile(code, filename);
  return mod.exports;
}

/**
 * The CLI's module (cli/main.ts's exports), from the cached bundle. Stack traces are the bundle's: mapping them to the
 * sources (NODE_OPTIONS=--enable-source-maps, with the bundle's linked map) makes Node read the map of every module
 * it loads, which costs a command a large share of its time.
 */
async function loadCli() {
  let bundle;
  try {
    bundle = await ensureCliBundle();
  } catch (err) {
    if (err instanceof BuildError || !["EACCES", "EROFS", "EPERM"].includes(err && err.code)) throw err;
    return inMemoryCli();
  }
  return require(bundle);
}

module.exports = { BuildError, bundleOptions, cacheDir, ensureCliBundle, inMemoryCli, loadCli };
