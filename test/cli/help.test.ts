/**
 * The command line explains itself: every command's --help is derived from its declared options and lists each with
 * its description, default and example, and the exit codes; user mistakes get one line naming the problem and the
 * fix. Run in-process (main with captured streams): nothing here starts a server.
 */
import { afterAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { COMMANDS, main, type CommandLoader } from "../../cli/main";
import type { Command, Options } from "../../cli/command";
import { EXIT_MEANINGS } from "../../core/exitCodes";
import { PROJECT_ROOT, runMain } from "../support/cli";
import { loadStackConfig } from "../../config/load";
import { fixtureStackFile } from "../fixtures/stacks";
import {
  HUB_CONFIGURATION_FILES,
  TEMPLATE_FILE_PREFIX,
  hubConfigurationFolder,
  renderedPipelineKey,
} from "../../core/naming";
import { deployedInputs } from "../../task/probe";

const work = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-help-"));
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  let err = "";
  stdout.on("data", (d) => (out += d));
  stderr.on("data", (d) => (err += d));
  const code = await main(argv, { stdout, stderr, stdin: new PassThrough() }, load);
  return { code, stdout: out, stderr: err };
}

/** The commands as main loads them, through vitest's module loader. */
const load: CommandLoader = async (name) =>
  ((await import(path.join(PROJECT_ROOT, "cli", "commands", `${COMMANDS[name]}.ts`))) as { default: Command }).default;

const BENCHMARKS = ["export", "emulator", "plan"];
const benchOptions = async (name: string) =>
  ((await import(path.join(PROJECT_ROOT, "bench", `${name}.ts`))) as { options: Options }).options;

/** commander wraps help to the terminal's width: compared with its lines joined. */
const flat = (text: string) => text.replace(/\s+/g, " ");

function expectOptionsListed(help: string, options: Options): void {
  for (const [name, o] of Object.entries(options)) {
    expect(flat(help), `--${name}`).toContain(
      `--${name}${o.type === "string" ? ` <${o.value}>` : ""} ${o.description}`,
    );
    if (o.default !== undefined || o.defaultText !== undefined)
      expect(flat(help)).toContain(`(default: ${o.defaultText ?? o.default})`);
    expect(flat(help)).toContain(`(example: ${o.example})`);
  }
}

/** Every command, and every action of one (`cls build`), with its declaration. */
async function allCommands(): Promise<[string, Command][]> {
  const all: [string, Command][] = [];
  for (const name of Object.keys(COMMANDS)) {
    const command = await load(name);
    all.push([name, command]);
    for (const [action, sub] of Object.entries(command.actions ?? {})) all.push([`${name} ${action}`, sub]);
  }
  return all;
}

describe("hub-export --help", () => {
  it("declares every option of every command and benchmark with a description, a value placeholder and an example", async () => {
    const all: [string, Options][] = [];
    for (const [name, command] of await allCommands()) all.push([name, command.options]);
    for (const b of BENCHMARKS) all.push([`bench ${b}`, await benchOptions(b)]);
    for (const [command, options] of all) {
      for (const [name, o] of Object.entries(options)) {
        expect(o.description.length, `${command} --${name}`).toBeGreaterThan(10);
        expect(o.example, `${command} --${name}`).toMatch(new RegExp(`^--${name}\\b`));
        if (o.type === "string") expect(o.value, `${command} --${name}`).toMatch(/^[A-Z]/);
      }
    }
  });

  it("every command's and action's --help lists each option with description, default and example, and the exit codes", async () => {
    for (const [name, command] of (await allCommands()).filter(([c]) => c !== "bench")) {
      const r = await cli(...name.split(" "), "--help");
      expect(r.code).toBe(0);
      expect(r.stderr).toBe("");
      expect(r.stdout).toContain(`Usage: hub-export ${name}`);
      expectOptionsListed(r.stdout, command.options);
      const codes = r.stdout
        .slice(r.stdout.indexOf("Exit codes:"))
        .split("\n")
        .slice(1)
        .filter(Boolean)
        .map((l) => l.trim().split(" ")[0]);
      expect(codes).toEqual(expect.arrayContaining(["0", "1", "2", "70"]));
    }
  });

  it("documents the --faults syntax, and the environment variables of run", async () => {
    const emulator = (await cli("emulator", "--help")).stdout;
    expect(emulator).toContain("--faults SPEC: rules separated by ';'");
    expect(emulator).toContain("queue.publish, cfg.routingRules");
    expect((await cli("run", "--help")).stdout).toContain(
      "HUB_EXPORT_DEFINITION, HUB_EXPORT_SCRIPTS, HUB_EXPORT_CONNECTIONS",
    );
  });

  it("run's examples are the qa stack's deployed keys (core/naming.ts), not a template file with a build number", async () => {
    // The qa stack as committed (the fixture): the examples do not follow a team's own values.
    const config = loadStackConfig({ file: fixtureStackFile("qa") });
    const deployed = deployedInputs(config);
    const help = flat((await cli("run", "--help")).stdout);
    expect(help).toContain(`(example: --definition s3://${config.bucket.name}/${renderedPipelineKey(config.jobName)})`);
    expect(help).toContain(`(example: --scripts ${deployed.scripts})`);
    expect(help).toContain(`(example: --connections ${deployed.connections})`);
    expect(help).toContain(
      `(example: --cls s3://${config.bucket.name}/${hubConfigurationFolder(config.jobName)}${HUB_CONFIGURATION_FILES.clsCsv})`,
    );
    expect(help).not.toContain(TEMPLATE_FILE_PREFIX);
  });

  it("cls build --help and cls check --help each say what that action does and list only its own options", async () => {
    const build = await cli("cls", "build", "--help");
    const check = await cli("cls", "check", "--help");
    expect([build.code, check.code]).toEqual([0, 0]);
    expect(build.stdout).not.toBe(check.stdout);
    expect(build.stdout).toMatch(
      /^Usage: hub-export cls build \[options\]\n\nBuild the CLS load sheet from the HR system's exports/,
    );
    expect(flat(check.stdout)).toMatch(
      /^Usage: hub-export cls check \[options\] Check the codes of the client's employees .* against the CLS load sheet/,
    );
    for (const option of ["--from", "--out", "--strict"])
      expect([build.stdout.includes(option), check.stdout.includes(option)], option).toEqual([true, false]);
    for (const option of ["--sheet", "--database-url"])
      expect([build.stdout.includes(option), check.stdout.includes(option)], option).toEqual([false, true]);
    const both = (await cli("cls", "--help")).stdout;
    expect(both).toMatch(/^ {2}build \[options\] {2}Build the CLS load sheet/m);
    expect(both).toMatch(/^ {2}check \[options\] {2}Check the codes/m);
  });

  it("the top-level help lists the commands and every exit code, 70 included; the README's table is the same", async () => {
    const r = await cli("--help");
    expect(r.code).toBe(0);
    for (const name of Object.keys(COMMANDS)) expect(r.stdout).toContain(`  ${name} `);
    expect(r.stdout).toMatch(/^ {2}70 {2}internal error/m);
    expect(r.stdout).toMatch(/^ {2}3 {3}run, local .*the export run ended ExecutionFailed/m);
    const readme = fs.readFileSync(path.join(PROJECT_ROOT, "README.md"), "utf8");
    const table = [...readme.matchAll(/^\| `(\d+)` \| (.*) \|$/gm)].map((m) => [m[1], m[2]]);
    expect(table).toEqual(Object.entries(EXIT_MEANINGS));
  });
});

describe("the exit codes, as the commands return them", () => {
  const listed = (help: string) =>
    help
      .slice(help.indexOf("Exit codes:"))
      .split("\n")
      .slice(1)
      .filter(Boolean)
      .map((l) => Number(l.trim().split(" ")[0]));

  it("local lists 3, which it returns when the run ends ExecutionFailed (npm start -- --hub-faults ...)", async () => {
    const help = (await cli("local", "--help")).stdout;
    expect(listed(help)).toEqual([0, 1, 2, 3, 70, 130]);
    expect(help).toMatch(/^ {2}3 {3}the export run ended ExecutionFailed/m);
  });

  it("every code a command's help lists is in the top-level help and in the README's table", async () => {
    const top = listed((await cli("--help")).stdout);
    const readme = fs.readFileSync(path.join(PROJECT_ROOT, "README.md"), "utf8");
    const table = [...readme.matchAll(/^\| `(\d+)` \|/gm)].map((m) => Number(m[1]));
    for (const [name] of (await allCommands()).filter(([c]) => c !== "bench")) {
      for (const code of listed((await cli(...name.split(" "), "--help")).stdout)) {
        expect(top, `${name}: ${code}`).toContain(code);
        expect(table, `${name}: ${code}`).toContain(code);
      }
    }
  });
});

describe("user mistakes get one line naming the problem and the fix", () => {
  const oneLine = (r: { stderr: string }) => {
    const lines = r.stderr.trimEnd().split("\n");
    expect(lines).toHaveLength(1);
    expect((lines[0].match(/'/g) ?? []).length % 2, lines[0]).toBe(0);
    return lines[0];
  };

  // commander's wording, one line, with our pointer to the command's help.
  it.each([
    [["validate", "--nope"], "hub-export validate: unknown option '--nope' (see 'hub-export validate --help')"],
    [
      ["validate", "--stak", "qa"],
      "hub-export validate: unknown option '--stak' (Did you mean --stack?) (see 'hub-export validate --help')",
    ],
    [
      ["validate", "qa"],
      "hub-export validate: too many arguments for 'validate'. Expected 0 arguments but got 1. (see 'hub-export validate --help')",
    ],
    [
      ["emulator", "--port", "-1"],
      "hub-export emulator: --port must be an integer from 0 to 65535, got '-1' (see 'hub-export emulator --help')",
    ],
    [
      ["local", "--employees"],
      "hub-export local: option '--employees <N>' argument missing (see 'hub-export local --help')",
    ],
    [["local", "--keep=yes"], "hub-export local: unknown option '--keep=yes' (see 'hub-export local --help')"],
    [
      ["status", "--job-name", "J", "--database-url", "notaurl"],
      "hub-export status: --database-url must be a URL like postgres://USER@HOST:5432/DATABASE; the value given is not a URL (see 'hub-export status --help')",
    ],
    [
      ["status", "--job-name", "J", "--database-url", "https://db.example.com/x"],
      "hub-export status: --database-url must be a postgres:// URL, got a https:// URL (see 'hub-export status --help')",
    ],
    [["cls", "frob"], "hub-export cls: unknown command 'frob' (see 'hub-export cls --help')"],
    [["cls", "chekc"], "hub-export cls: unknown command 'chekc' (Did you mean check?) (see 'hub-export cls --help')"],
    [["cls", "--stack", "qa", "check"], "hub-export cls: unknown option '--stack' (see 'hub-export cls --help')"],
    [
      ["cls", "build", "--stack", "qa", "--sheet", "x.csv"],
      "hub-export cls build: unknown option '--sheet' (see 'hub-export cls build --help')",
    ],
    [["frobnicate"], "hub-export: unknown command 'frobnicate' (see 'hub-export --help')"],
    [["statsu"], "hub-export: unknown command 'statsu' (Did you mean status?) (see 'hub-export --help')"],
  ])("%j", async (argv, message) => {
    const r = await cli(...argv);
    expect(r.code).toBe(2);
    expect(oneLine(r)).toBe(message);
  });

  it("a command that needs an action, without one, shows its help on stderr", async () => {
    for (const argv of [[], ["cls"], ["hub"]]) {
      const r = await cli(...argv);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toContain(`Usage: ${["hub-export", ...argv].join(" ")} [options] [command]`);
    }
  });

  it("an unknown benchmark", async () => {
    const r = await runMain(["bench", "nope"]);
    expect(r.code).toBe(2);
    expect(oneLine(r)).toBe(
      "hub-export bench: unknown benchmark 'nope': one of export, emulator, plan, outage (see 'hub-export bench --help')",
    );
  });

  it("--stack with no such stack lists the stacks there are", async () => {
    const r = await cli("validate", "--stack", "nope");
    expect(r.code).toBe(1);
    expect(oneLine(r)).toBe(
      `no stack 'nope': Pulumi.nope.yaml does not exist in ${PROJECT_ROOT}; the stacks are prod, qa (or give --file PATH)`,
    );
  });

  it("malformed YAML is reported at its line and column, without the parser's dangling frame", async () => {
    const file = path.join(work, "Pulumi.bad.yaml");
    fs.writeFileSync(file, "config:\n  hubExport:clientName: ACME\n  hubExport:tenants:\n    - a: 1\n    b: 2\n");
    const r = await cli("validate", "--file", file);
    expect(r.code).toBe(1);
    expect(oneLine(r)).toBe(`${file}:5:1: not valid YAML: All mapping items must start at the same column`);
  });

  it("local reads the stack file before it starts the database", async () => {
    const dir = path.join(work, "state");
    const r = await cli("local", "--stack", "nope", "--dir", dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("no stack 'nope'");
    expect(fs.existsSync(path.join(dir, "postgres"))).toBe(false);
  });
});

describe("the test run's temporary folder", () => {
  it("is the run's own folder in the project, not the system's", () => {
    expect(path.relative(path.join(PROJECT_ROOT, ".tmp"), os.tmpdir())).toMatch(/^test-\d+$/);
  });
});
