/**
 * `pulumi up` serializes each dynamic provider with everything its methods capture and runs the text in the
 * dynamic-provider host: a plain node process with no TypeScript loader. These tests serialize the providers as
 * components/dynamicResource.ts does, check that no project module or heavy dependency was captured, and run the text the
 * way the host does: compiled by vitest, and compiled by TypeScript as ts-node does under `pulumi up`.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import * as pulumi from "@pulumi/pulumi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hubApiConfigRows } from "../../core/rows";
import { defaultRoutingRules } from "../../core/routingRules";
import { encodeCredentialsString } from "../../core/credentials";
import { startEmulator, type Emulator } from "../../emulator";
import { configRowProvider, CONFIG_ROW_PROVIDER_VERSION, type ConfigRowState } from "../../providers/sqlRows";
import { baselineProvider } from "../../providers/baseline";
import {
  routingRulesProvider,
  ROUTING_RULES_PROVIDER_VERSION,
  type RoutingRuleSetState,
} from "../../providers/routingRules";
import { routingRulesHash } from "../../core/routingRules";
import { scriptFilesProvider, SCRIPT_FILES_PROVIDER_VERSION } from "../../providers/scriptFiles";
import { CREDENTIALS_INI_TEMPLATE, TENANT_CREDENTIALS_TEMPLATE } from "../../core/credentialFiles";
import { sharedObjectProvider, SHARED_OBJECT_PROVIDER_VERSION } from "../../providers/sharedObjects";
import {
  keptScriptFiles,
  releaseManifest,
  scriptsReleaseProvider,
  SCRIPTS_RELEASE_PROVIDER_VERSION,
} from "../../providers/scriptsRelease";
import { readScriptsRelease } from "../../core/scriptsRelease";
import yazl from "yazl";
import { startS3Emulator } from "../support/s3";
import { awsProfilesEnv, startStsStandIn } from "../support/stsStandIn";
import { setEnv } from "../support/loopbackAws";
import { baselineInputs, databaseConfigOf, warehouseWithBaseline, type Warehouse } from "../fixtures/warehouse";

const execFileAsync = promisify(execFile);
const ROOT = path.resolve(__dirname, "../..");
const FIXTURES = path.join(ROOT, "test/fixtures");
const TENANT = "3f6c9a2e-5b1d-4e8f-9a7c-2d4b6e8f0a1c";
const CREDENTIALS = { clientId: "acme-us-qa-hrsys", clientSecret: "s3cr3t-Ab9" };

const PROVIDERS = {
  configRow: ["providers/sqlRows.ts", "configRowProvider"],
  baseline: ["providers/baseline.ts", "baselineProvider"],
  routingRules: ["providers/routingRules.ts", "routingRulesProvider"],
  scriptFiles: ["providers/scriptFiles.ts", "scriptFilesProvider"],
  scriptsRelease: ["providers/scriptsRelease.ts", "scriptsReleaseProvider"],
  sharedObjects: ["providers/sharedObjects.ts", "sharedObjectProvider"],
} as const;
type ProviderName = keyof typeof PROVIDERS;

/** Exactly what components/dynamicResource.ts (as pulumi.dynamic.Resource) does with its provider. */
async function serialize(provider: object): Promise<string> {
  return (await pulumi.runtime.serializeFunction(() => provider, { allowSecrets: true })).text;
}

/** Runs calls on a serialized provider in a plain node process, as the dynamic-provider host does. */
async function runInHost(
  providerText: string,
  calls: ({ method: string; args: unknown[] } | { method: "configure"; config: Record<string, string> })[],
): Promise<any[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-host-"));
  const job = path.join(dir, "job.json");
  fs.writeFileSync(job, JSON.stringify({ providerText, calls }));
  try {
    const { stdout } = await execFileAsync(process.execPath, [path.join(FIXTURES, "dynamicProviderHost.cjs"), job], {
      cwd: ROOT,
      env: { ...process.env, NODE_OPTIONS: "" },
    });
    return JSON.parse(stdout);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

let wh: Warehouse;
let hub: Emulator;
let texts: Record<"vitest" | "typescript", Record<ProviderName, string>>;

beforeAll(async () => {
  [wh, hub] = await Promise.all([
    warehouseWithBaseline("serial"),
    startEmulator({ config: { tenants: { [TENANT]: CREDENTIALS } } }),
  ]);
  const { stdout } = await execFileAsync(
    process.execPath,
    [path.join(FIXTURES, "serializeCompiled.cjs"), JSON.stringify(PROVIDERS)],
    { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 },
  );
  texts = {
    vitest: {
      configRow: await serialize(configRowProvider),
      baseline: await serialize(baselineProvider),
      routingRules: await serialize(routingRulesProvider),
      scriptFiles: await serialize(scriptFilesProvider),
      scriptsRelease: await serialize(scriptsReleaseProvider),
      sharedObjects: await serialize(sharedObjectProvider),
    },
    typescript: JSON.parse(stdout),
  };
});
afterAll(async () => {
  await Promise.all([wh?.drop(), hub?.close()]);
});

const row = (): ConfigRowState => {
  const r = hubApiConfigRows(wh.config)[0];
  return {
    target: wh.target,
    schema: "staging",
    table: r.table,
    key: r.key,
    values: r.values,
    version: CONFIG_ROW_PROVIDER_VERSION,
  };
};
/** The stack config as the engine hands it to a dynamic provider's configure: the login is only there. */
const configure = () => ({
  method: "configure" as const,
  config: { "hubExport:database": JSON.stringify(databaseConfigOf(wh.connection)), "hubExport:environment": "QA" },
});
const ruleSet = (): RoutingRuleSetState => {
  const rules = defaultRoutingRules();
  return {
    cfgApiUrl: hub.urls.cfg,
    tenantId: TENANT,
    credentialsString: encodeCredentialsString(CREDENTIALS),
    rules,
    rulesHash: routingRulesHash(rules),
    version: ROUTING_RULES_PROVIDER_VERSION,
  };
};

for (const compiler of ["vitest", "typescript"] as const) {
  describe(`providers compiled by ${compiler}`, () => {
    it("capture no project module, no SDK and no schema library", () => {
      for (const [name, text] of Object.entries(texts[compiler])) {
        // Only npm packages and builtins are required, by name, inside the functions.
        const required = [...text.matchAll(/require\(["']([^"']+)["']\)/g)].map((m) => m[1]);
        const sql = ["pg", "node:tls", "node:fs", "node:path"];
        const s3 = ["@aws-sdk/client-s3", "@aws-sdk/client-sts", "node:fs", "node:path", "node:crypto"];
        const expected = {
          routingRules: ["node:crypto"],
          baseline: [...sql, "node:crypto"],
          configRow: sql,
          scriptFiles: s3,
          scriptsRelease: ["yauzl", "node:stream/consumers", ...s3],
          sharedObjects: s3,
        }[name as ProviderName];
        expect(new Set(required), name).toEqual(new Set(expected));
        for (const captured of [
          "__vi_",
          "__vite_ssr",
          "_1.",
          "@pulumi",
          "zod",
          "hubContract",
          "sourceMappingURL",
          wh.connection.password,
        ])
          expect(text, `${name} captures ${captured}`).not.toContain(captured);
        // A few functions each, never a captured module (those run to hundreds of kB).
        expect(text.length, name).toBeLessThan(64_000);
      }
    });

    it("run in a plain node process: config rows against PostgreSQL", async () => {
      const inputs = row();
      const [, checked, created, read, diff] = await runInHost(texts[compiler].configRow, [
        configure(),
        { method: "check", args: [inputs, inputs] },
        { method: "create", args: [inputs] },
        {
          method: "read",
          args: [`staging.hub_api_config/hub_api_name=ERS,hub_tenant_id=${inputs.key.hub_tenant_id}`, inputs],
        },
        { method: "diff", args: ["id", inputs, { ...inputs, key: { ...inputs.key, hub_api_name: "CFG" } }] },
      ]);
      expect(checked).toEqual({ inputs });
      expect(created.id).toBe(`staging.hub_api_config/hub_api_name=ERS,hub_tenant_id=${inputs.key.hub_tenant_id}`);
      expect(read.props.values).toEqual(inputs.values);
      expect(diff).toEqual({ changes: true, replaces: ["key"], deleteBeforeReplace: true });
      // The state holds no login: a delete (a later `up`, another process) gets it from the stack config again.
      expect(JSON.stringify(created.outs)).not.toContain(wh.connection.password);
      await runInHost(texts[compiler].configRow, [configure(), { method: "delete", args: [created.id, inputs] }]);
      expect(
        await wh.query("SELECT 1 FROM staging.hub_api_config WHERE hub_tenant_id = $1", [inputs.key.hub_tenant_id]),
      ).toEqual([]);
    });

    it("run in a plain node process: the baseline against PostgreSQL", async () => {
      const inputs = baselineInputs(wh.target, wh.config);
      const [, checked, created, diff] = await runInHost(texts[compiler].baseline, [
        configure(),
        { method: "check", args: [inputs, inputs] },
        { method: "create", args: [inputs] },
        { method: "diff", args: ["id", inputs, inputs] },
      ]);
      expect(checked).toEqual({ inputs });
      expect(created.outs.sha256).toBe(inputs.sha256);
      expect(diff).toEqual({ changes: false });
    });

    it("run in a plain node process: without the stack's database config, a SQL resource stops with a clear error", async () => {
      const error = await runInHost(texts[compiler].configRow, [{ method: "create", args: [row()] }]).catch(
        (e: Error) => e,
      );
      expect((error as Error).message).toMatch(
        /no database login: the provider was not configured with the stack's hubExport:database/,
      );
    });

    it("run in a plain node process: routing rules against the emulator", async () => {
      hub.reset();
      const inputs = ruleSet();
      const [checked, created] = await runInHost(texts[compiler].routingRules, [
        { method: "check", args: [inputs, inputs] },
        { method: "create", args: [inputs] },
      ]);
      expect(checked).toEqual({ inputs });
      expect(created.id).toBe(TENANT);
      expect(hub.state().routingRules[TENANT]).toMatchObject({ posts: 1, rules: defaultRoutingRules() });
    });

    it("run in a plain node process: a scripts release applied to a folder, read from its zip", async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-serial-release-"));
      try {
        const zip = new yazl.ZipFile();
        zip.addBuffer(Buffer.from("print('v1')\n"), "lib/export_hub.py");
        zip.end();
        const chunks: Buffer[] = [];
        const bytes = await new Promise<Buffer>((resolve, reject) =>
          zip.outputStream
            .on("data", (c: Buffer) => chunks.push(c))
            .on("end", () => resolve(Buffer.concat(chunks)))
            .on("error", reject),
        );
        const zipPath = path.join(dir, "hub_python_scripts.zip");
        fs.writeFileSync(zipPath, bytes);
        const folder = path.join(dir, "scripts");
        fs.mkdirSync(folder);
        fs.writeFileSync(path.join(folder, "old.py"), "old");
        fs.writeFileSync(path.join(folder, "credentials.ini"), "[warehouse]\n");
        const release = await readScriptsRelease(bytes, "r.zip");
        const inputs = {
          location: { kind: "folder", dir: folder },
          zipPath,
          source: "r.zip",
          sha256: release.sha256,
          files: releaseManifest(release),
          keep: keptScriptFiles(release),
          version: SCRIPTS_RELEASE_PROVIDER_VERSION,
        };
        const [checked, created] = await runInHost(texts[compiler].scriptsRelease, [
          { method: "check", args: [inputs, inputs] },
          { method: "create", args: [inputs] },
        ]);
        expect(checked).toEqual({ inputs });
        expect(created.id).toBe(folder);
        expect(fs.readdirSync(folder).sort()).toEqual(["credentials.ini", "lib"]);
        expect(fs.readFileSync(path.join(folder, "lib/export_hub.py"), "utf8")).toBe("print('v1')\n");
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it("run in a plain node process: a shared object in a folder, created only where absent", async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-serial-shared-"));
      try {
        fs.mkdirSync(path.join(dir, "Tools"));
        fs.writeFileSync(path.join(dir, "Tools/vendor.ini"), "the vendor's");
        const inputs = (key: string) => ({
          location: { kind: "folder", dir },
          key,
          content: "ours",
          contentType: "text/plain",
          version: SHARED_OBJECT_PROVIDER_VERSION,
        });
        const [, existing, absent] = await runInHost(texts[compiler].sharedObjects, [
          { method: "check", args: [inputs("Tools/vendor.ini"), inputs("Tools/vendor.ini")] },
          { method: "create", args: [inputs("Tools/vendor.ini")] },
          { method: "create", args: [inputs("Tools/ours.ini")] },
        ]);
        expect([existing.outs.created, absent.outs.created]).toEqual([false, true]);
        expect(fs.readFileSync(path.join(dir, "Tools/vendor.ini"), "utf8")).toBe("the vendor's");
        expect(fs.readFileSync(path.join(dir, "Tools/ours.ini"), "utf8")).toBe("ours");
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it("run in a plain node process: a shared object in S3, with the stack's aws:profile and its account checked", async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-serial-aws-"));
      const [s3, sts] = await Promise.all([
        startS3Emulator({ buckets: ["platform-qa"] }),
        startStsStandIn({ AKIADEFAULT0000000000: "999999999999", AKIAACMEQA0000000000: "111111111111" }),
      ]);
      const restore = setEnv({
        ...awsProfilesEnv(dir, { default: "AKIADEFAULT0000000000", "acme-qa": "AKIAACMEQA0000000000" }),
        AWS_ENDPOINT_URL_S3: s3.url,
        AWS_ENDPOINT_URL_STS: sts.url,
      });
      try {
        const inputs = {
          location: { kind: "s3", bucket: "platform-qa", prefix: "", region: "us-east-1" },
          key: "Tools/hub_python_scripts/",
          content: "",
          contentType: "text/plain",
          version: SHARED_OBJECT_PROVIDER_VERSION,
        };
        const aws = { "aws:region": "us-east-1", "aws:profile": "acme-qa", "aws:allowedAccountIds": "[111111111111]" };
        const [, created] = await runInHost(texts[compiler].sharedObjects, [
          { method: "configure", config: aws },
          { method: "create", args: [inputs] },
        ]);
        expect(created.outs.created).toBe(true);
        expect(s3.requests.map((r) => `${r.method} ${r.accessKeyId}`)).toEqual(["PUT AKIAACMEQA0000000000"]);
        expect(sts.calls.map((c) => `${c.action} ${c.accessKeyId}`)).toEqual([
          "GetCallerIdentity AKIAACMEQA0000000000",
        ]);
      } finally {
        restore();
        await Promise.all([s3.close(), sts.close()]);
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it("run in a plain node process: the shared credential files in a folder", async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-serial-scripts-"));
      try {
        fs.writeFileSync(path.join(dir, "credentials_template.ini"), CREDENTIALS_INI_TEMPLATE);
        fs.writeFileSync(path.join(dir, "tenant_credentials_template.txt"), TENANT_CREDENTIALS_TEMPLATE);
        const inputs = {
          location: { kind: "folder", dir },
          warehouseConnection: "PLAT_WAREHOUSE_QA",
          entries: { [TENANT]: "cred==" },
          version: SCRIPT_FILES_PROVIDER_VERSION,
        };
        const [checked, created] = await runInHost(texts[compiler].scriptFiles, [
          { method: "check", args: [inputs, inputs] },
          { method: "create", args: [inputs] },
        ]);
        expect(checked).toEqual({ inputs });
        expect(created.id).toBe(dir);
        expect(JSON.parse(fs.readFileSync(path.join(dir, "tenant_credentials.txt"), "utf8"))).toEqual({
          [TENANT]: "cred==",
        });
        await runInHost(texts[compiler].scriptFiles, [{ method: "delete", args: [created.id, inputs] }]);
        expect(JSON.parse(fs.readFileSync(path.join(dir, "tenant_credentials.txt"), "utf8"))).toEqual({});
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}
