/**
 * Who supplies each value (config/suppliers.ts) is one list: every key a stack file holds has an entry, `validate`
 * groups what is left to set by it, and docs/pulumi.md's "What you need, and from whom" is the same list.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import YAML from "yaml";
import { SUPPLIED_VALUES, SUPPLIERS, suppliedValue, supplierOf, type SupplierId } from "../../config/suppliers";
import { fixtureStackFile } from "../fixtures/stacks";
import { PROJECT_ROOT, runMain } from "../support/cli";
import { codeBlocks, stackConfigFragment } from "../docs/snippets";

/** The pages with stack config fragments. */
const DOC_PAGES = [
  "docs/onboarding.md",
  "docs/pulumi.md",
  "docs/pulumi-reference.md",
  "docs/operating.md",
  "docs/hub-contract.md",
  "cls/README.md",
];

/** Every leaf key of a config block: `hubExport:hubTenants[0].clientId`. */
function leafKeys(config: Record<string, unknown>): string[] {
  const keys: string[] = [];
  const walk = (value: unknown, key: string) => {
    const map = value && typeof value === "object" && !Array.isArray(value) && !("secure" in value);
    const list = Array.isArray(value) && value.some((v) => v && typeof v === "object");
    if (list) (value as unknown[]).forEach((v, i) => walk(v, `${key}[${i}]`));
    else if (map) for (const [k, v] of Object.entries(value)) walk(v, `${key}.${k}`);
    else keys.push(key);
  };
  for (const [key, value] of Object.entries(config)) walk(value, key);
  return keys;
}

/** The tables of docs/pulumi.md's "Values, by who supplies them", as the list makes them. */
function tables(): string {
  return (Object.keys(SUPPLIERS) as SupplierId[])
    .map((s) => {
      const rows = SUPPLIED_VALUES.filter((v) => v.supplier === s).map((v) => `| \`${v.key}\` | ${v.what} |`);
      return [`#### From ${SUPPLIERS[s]}`, "", "| Key | What |", "|---|---|", ...rows].join("\n");
    })
    .join("\n\n");
}

describe("who supplies each value", () => {
  it("has an entry for every key of the stack files and of the docs' config fragments", () => {
    type File = { config: Record<string, unknown> };
    const stackFile = (s: "qa" | "prod") => YAML.parse(fs.readFileSync(fixtureStackFile(s), "utf8")) as File;
    const keys = [...leafKeys(stackFile("qa").config), ...leafKeys(stackFile("prod").config)];
    for (const page of DOC_PAGES) {
      const blocks = codeBlocks(page, fs.readFileSync(path.join(PROJECT_ROOT, page), "utf8"));
      for (const block of blocks.filter((b) => b.lang === "yaml")) {
        const text = block.lines.filter((l) => !/^\s*# not run here/.test(l)).join("\n");
        keys.push(...leafKeys(stackConfigFragment({ ...block, lines: text.split("\n") })));
      }
    }
    expect(keys.length).toBeGreaterThan(100);
    expect([...new Set(keys)].filter((k) => !suppliedValue(k))).toEqual([]);
    expect(supplierOf("hubExport:hubTenants[2].clientSecret")).toBe("hub");
    expect(supplierOf("hubExport:hub.regions.APAC.apis.CFG")).toBe("hub");
    expect(supplierOf("hubExport:queues.EU.connectionName")).toBe("you");
    expect(supplierOf("hubExport:database.admin.password")).toBe("dba");
    expect(supplierOf("hubExport:database.task.password")).toBe("you");
    expect(supplierOf("hubExport:network.securityGroupIds[0]")).toBe("network");
    expect(supplierOf("aws:allowedAccountIds[0]")).toBe("aws");
    expect(supplierOf("hub-export:clientName")).toBe("you");
  });

  it("docs/pulumi.md lists the same values under the same teams", () => {
    const page = fs.readFileSync(path.join(PROJECT_ROOT, "docs", "pulumi.md"), "utf8");
    const start = page.indexOf("### Values, by who supplies them");
    expect(start).toBeGreaterThan(0);
    const end = page.indexOf("\n## ", start);
    expect(page.slice(start, end), "paste the tables the list makes (the expected text)").toContain(tables());
  });

  it("validate lists what is left to set under who usually supplies it", async () => {
    const r = await runMain(["validate", "--file", fixtureStackFile("qa")]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines[1]).toMatch(/^before 'pulumi up': 32 values to set \(pulumi preview and up stop on them\), by who /);
    const groups = new Map<string, string[]>();
    let current = "";
    const probe = lines.findIndex((l) => l.startsWith("then, before 'pulumi up': "));
    expect(lines[probe]).toBe(
      `then, before 'pulumi up': npx hub-export probe --file ${fixtureStackFile("qa")} --warehouse (what the warehouse's admin login lacks, as the SQL its DBA runs)`,
    );
    for (const line of lines.slice(2, probe).filter(Boolean)) {
      const head = /^ {2}from (.*) \((\d+)\):$/.exec(line);
      if (head) groups.set((current = head[1]), []);
      else groups.get(current)!.push(line.trim().split(": ")[0]);
    }
    expect([...groups.keys()]).toEqual(Object.values(SUPPLIERS));
    const dba = ["hubExport:database.admin.password", "hubExport:database.host", "hubExport:database.caBundle"];
    expect(groups.get("the warehouse's DBA")).toEqual(dba);
    const network = ["subnetIds[0]", "subnetIds[1]", "securityGroupIds[0]"].map((k) => `hubExport:network.${k}`);
    expect(groups.get("the network team")).toEqual(network);
    expect(groups.get("the hub team")).toContain("hubExport:hubTenants[0].hubTenantId");
    expect(groups.get("the hub team")).toContain("hubExport:queues.EU.clientSecret");
    expect(groups.get("the AWS account owners")).toContain("aws:allowedAccountIds[0]");
    for (const [who, keys] of groups) for (const key of keys) expect(SUPPLIERS[supplierOf(key)], key).toBe(who);
  });
});
