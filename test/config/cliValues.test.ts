/**
 * Config values as the Pulumi CLI writes them. `pulumi config set --path KEY 123456789012` stores the digits as a YAML
 * integer: the account id and every id-like key must read it back as text, and the commands that the docs and the
 * preflight print must bring a stack to ready (not loop on the same command).
 */
import { offlineObjectInspector } from "../../components/storage/objectGuard";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { inspectStackFile } from "../../config/load";
import { readinessItems, accountIdText } from "../../config/preflight";
import { validateStackConfig } from "../../config/validate";
import { engineConfigFromStackFile, runProgramUnderMocks } from "../../components/planner";
import { hubExportProgram } from "../../components/program";
import { applyConfigCommand, readConfigBlock, writeStackFile, type ConfigBlock } from "../support/pulumiConfig";
import { rawConfig } from "../support/rawConfig";
import { FIXED_SOURCE_HASH } from "../fixtures/plan";
import { fixtureStackFile } from "../fixtures/stacks";
import { PROJECT_ROOT, runMain } from "../support/cli";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-cli-values-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The `pulumi config set|rm` lines of docs/pulumi.md's "From clone to first up". */
function docsCommands(): string[] {
  const text = fs.readFileSync(path.join(PROJECT_ROOT, "docs", "pulumi.md"), "utf8");
  const section = text.slice(
    text.indexOf("## From clone to first `up`"),
    text.indexOf("\n## ", text.indexOf("## From clone to first `up`") + 3),
  );
  return section
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => /^pulumi config (set|rm) /.test(l));
}

/** The stack file with `config` as its block, written where `readinessItems` reads it, and what is left to do. */
function readiness(stack: "qa" | "prod", config: ConfigBlock, root = PROJECT_ROOT) {
  const file = path.join(dir, `Pulumi.${stack}.yaml`);
  writeStackFile(file, fixtureStackFile(stack), config);
  const inspected = inspectStackFile({ file, stack });
  return { file, items: readinessItems({ stack, inspected, allConfig: readConfigBlock(file), root }) };
}

describe("config values as the CLI stores them", () => {
  it("the docs' commands of 'From clone to first up' clear what they set, the account id included", () => {
    const all = docsCommands();
    expect(all.length).toBeGreaterThanOrEqual(9);
    // qa's image by digest, as `pulumi stack output image --stack qa` prints it (test/components/image.test.ts plans it).
    const qaImage = `111111111111.dkr.ecr.us-east-1.amazonaws.com/hub-export-acme-qa@sha256:${"5e".repeat(32)}`;
    for (const stack of ["qa", "prod"] as const) {
      const commands = all
        .filter((l) => l.includes(`--stack ${stack} `))
        .map((l) => l.replace(`"$(pulumi stack output image --stack qa)"`, qaImage));
      const config = readConfigBlock(fixtureStackFile(stack));
      for (const line of commands) applyConfigCommand(config, line, "Prompted-Secret-1");
      const { file, items } = readiness(stack, config);
      const keysSet = commands.map((l) => /'([^']+)'/.exec(l)![1]);
      for (const key of keysSet)
        expect(
          items.map((i) => i.key),
          `${stack}: ${key} is still listed`,
        ).not.toContain(key);
      if (stack === "qa") {
        // As the CLI writes them: the account id and the all-digit access id are YAML integers, read as text.
        expect((config["aws:allowedAccountIds"] as unknown[])[0]).toBe(123456789012);
        expect((config["hubExport:queues"] as Record<string, Record<string, unknown>>).US.clientAccessId).toBe(4711002);
        expect(inspectStackFile({ file, stack }).config.queues.US!.clientAccessId).toBe("4711002");
      } else {
        expect(keysSet).toEqual(["hubExport:image.promoted"]);
        expect(inspectStackFile({ file, stack }).config.image.promoted).toBe(qaImage);
      }
    }
  });

  it.each(["qa", "prod"] as const)(
    "the commands the preflight prints bring stack %s to ready, and the program runs on what they stored",
    async (stack) => {
      // The CA bundle's command is a download: into a copy of certs/ under this test's folder, inside the project.
      const config = readConfigBlock(fixtureStackFile(stack));
      let { items } = readiness(stack, config);
      expect(items.length).toBeGreaterThan(20);
      const example = (problem: string) => /\(example: (.*)\)$/.exec(problem)?.[1];
      for (const item of items) {
        if (!item.command.startsWith("pulumi config ")) continue;
        const value = item.key.startsWith("aws:allowedAccountIds") ? "210987654321" : example(item.problem);
        applyConfigCommand(
          config,
          item.command.replace(/ <[^>]+>$/, value === undefined ? "" : ` ${value}`),
          `Secret-for-${item.key}`,
        );
      }
      expect(config["aws:allowedAccountIds"]).toEqual([210987654321]);
      const caBundle = path.relative(PROJECT_ROOT, path.join(dir, "rds-global-bundle.pem"));
      fs.writeFileSync(
        path.join(PROJECT_ROOT, caBundle),
        "-----BEGIN CERTIFICATE-----\nstand-in\n-----END CERTIFICATE-----\n",
      );
      (config["hubExport:database"] as Record<string, unknown>).caBundle = caBundle;
      ({ items } = readiness(stack, config));
      expect(items).toEqual([]);

      // The program's own preflight on the same values, as the engine hands them over (objects as JSON text).
      const engine = engineConfigFromStackFile(path.join(dir, `Pulumi.${stack}.yaml`));
      const run = await runProgramUnderMocks({
        stack,
        config: engine.config,
        secretKeys: engine.secretKeys,
        program: () =>
          hubExportProgram({ taskSourceHash: FIXED_SOURCE_HASH, objectInspector: offlineObjectInspector() }),
      });
      expect(run.resources.map((r) => r.type)).toContain("hubExport:index:HubExport");
    },
  );

  it("the offline commands of 'From clone to first up' run on the repository's stack files", async () => {
    const text = fs.readFileSync(path.join(PROJECT_ROOT, "docs", "pulumi.md"), "utf8");
    const section = text.slice(
      text.indexOf("## From clone to first `up`"),
      text.indexOf("\n## ", text.indexOf("## From clone to first `up`") + 3),
    );
    const commands = [
      ...new Set(
        [...section.matchAll(/`npx hub-export ((?:validate|plan|render) --stack \w+(?: --full)?)`/g)].map((m) => m[1]),
      ),
    ];
    expect(commands.map((c) => c.replace(" --full", ""))).toEqual([
      "validate --stack qa",
      "plan --stack qa",
      "render --stack qa",
    ]);
    for (const command of commands) {
      // A hang guard: a plan took over 120 s at a load of 25 on two cores.
      const result = await runMain(command.split(" "));
      expect(result.code, `${command}: ${result.stderr}`).toBe(0);
    }
    // Three commands, a plan among them: on a loaded machine each may take minutes.
  }, 900_000);

  it("reads an account id stored as a number, and still refuses one that is not 12 digits", () => {
    expect(accountIdText(123456789012)).toBe("123456789012");
    expect(accountIdText("012345678901")).toBe("012345678901");
    expect(accountIdText(12345678901)).toBeUndefined();
    expect(accountIdText("12345678901x")).toBeUndefined();
    const config = readConfigBlock(fixtureStackFile("qa"));
    applyConfigCommand(config, "pulumi config set --stack qa --path 'aws:allowedAccountIds[0]' 2109876543");
    expect(readiness("qa", config).items.filter((i) => i.key.startsWith("aws:"))).toEqual([
      {
        key: "aws:allowedAccountIds[0]",
        problem: "must be a 12-digit AWS account id",
        command: "pulumi config set --stack qa --path 'aws:allowedAccountIds[0]' <12-digit account id>",
      },
    ]);
  });

  it("reads every id-like key given as an integer as its digits; a quoted value keeps its leading zeros", () => {
    const raw = rawConfig();
    raw.hubTenants[0].clientId = 4711;
    raw.hubTenants[1].hubTenantCode = 42;
    raw.platTenants[1].hubTenantCode = 42;
    raw.platTenants[0].codebase = 1;
    raw.platTenants[0].connectorId = 9000;
    raw.queues.US.clientAccessId = 123456789;
    raw.queues.EU.queueName = 77;
    raw.queues.EU.clientAccessId = "000123";
    raw.bucket.name = 123456;
    const config = validateStackConfig(raw, { source: "test" });
    expect(config.hubTenants.map((t) => [t.clientId, t.hubTenantCode])).toEqual([
      ["4711", "ACME_US"],
      ["acme-eu", "42"],
    ]);
    expect([
      config.platTenants[0].codebase,
      config.platTenants[0].connectorId,
      config.platTenants[1].hubTenantCode,
    ]).toEqual(["1", "9000", "42"]);
    expect([
      config.queues.US!.clientAccessId,
      config.queues.EU!.queueName,
      config.queues.EU!.clientAccessId,
      config.bucket.name,
    ]).toEqual(["123456789", "77", "000123", "123456"]);
  });

  it("refuses an integer too long to be exact, and other numbers, saying how to keep the text", () => {
    const raw = rawConfig();
    raw.hubTenants[0].clientId = Number("12345678901234567890"); // as YAML reads it: not exact
    raw.queues.US.clientAccessId = 1.5;
    expect(() => validateStackConfig(raw, { source: "test" })).toThrow(
      /hubExport:hubTenants\[0\]\.clientId: is a number, not text: write it in quotes in the stack file/,
    );
    expect(() => validateStackConfig(raw, { source: "test" })).toThrow(
      /hubExport:queues\.US\.clientAccessId: is a number, not text/,
    );
  });
});
