/**
 * Renames that work: before any change, the stack says what a destroy or a client rename keeps and why (stack output
 * onRemoval), and that statement is the components' own choices: every retained or protected resource is covered.
 */
import { describe, expect, it } from "vitest";
import { KEPT_BY_PROVIDER_TYPES, onRemoval } from "../../components/onRemoval";
import { retentionOf } from "../../components/hubExport";
import { configFromEngine } from "../../config/load";
import { editKey, fixtureStack } from "../fixtures/stacks";
import { inputs, ofType, one, planOf } from "../fixtures/plan";

describe("what a destroy or a rename keeps", () => {
  it.each(["qa", "prod"] as const)(
    "stack %s: every retained or protected resource is named in onRemoval, with why, and nothing else",
    async (stack) => {
      const engine = fixtureStack(stack).config;
      const run = await planOf(engine, stack);
      const config = configFromEngine(engine, stack);
      const removal = onRemoval(config, retentionOf(config), `/ecs/hub-export-acme-${stack}`);
      const coveredTypes = new Set(removal.kept.flatMap((k) => k.types));
      const kept = run.resources.filter(
        (r) => r.options.retainOnDelete || r.options.protect || KEPT_BY_PROVIDER_TYPES.includes(r.type),
      );
      expect(kept.length).toBeGreaterThan(0);
      for (const r of kept)
        expect(coveredTypes, `${r.type} ${r.name} is kept but onRemoval does not say so`).toContain(r.type);
      // And no claim without a resource behind it.
      for (const item of removal.kept)
        for (const t of item.types)
          expect(
            kept.map((r) => r.type),
            `${item.what}: ${t}`,
          ).toContain(t);
      expect(run.outputs.onRemoval).toEqual({
        kept: removal.kept.map(({ what, why }) => ({ what, why })),
        removed: removal.removed,
      });
    },
  );

  it("prod keeps its runs' logs (expiring with their retention), and says what a rename costs the alert subscribers", async () => {
    const run = await planOf(fixtureStack("prod").config, "prod");
    const logGroup = one(run, "aws:cloudwatch/logGroup:LogGroup");
    expect(logGroup.options.retainOnDelete).toBe(true);
    expect(inputs(logGroup).retentionInDays).toBe(90);
    const out = run.outputs.onRemoval as { kept: { what: string; why: string }[]; removed: string[] };
    expect(out.kept).toContainEqual({
      what: "the log group /ecs/hub-export-acme-prod with the runs' logs",
      why: "the record of what prod exported; its logs expire after 90 days (hubExport:task.logRetentionDays), and a renamed stack writes to a new one",
    });
    expect(out.removed).toContainEqual(
      expect.stringMatching(
        /^the alerts topic with its subscriptions: after a rename, every email address gets AWS's confirmation mail again/,
      ),
    );
    expect(out.removed).toContainEqual(
      expect.stringMatching(
        /^nothing of the image: this stack runs .*@sha256:[0-9a-f]{64} from the build stack's repository/,
      ),
    );
    expect(ofType(run, "aws:ecr/repository:Repository")).toEqual([]);
  });

  it("a destroy of qa's created bucket takes the shared objects and the credential files with it; both stacks say what becomes of the shared files and name the run tables' function", async () => {
    const qa = (await planOf(fixtureStack("qa").config, "qa")).outputs.onRemoval as {
      kept: { what: string; why: string }[];
      removed: string[];
    };
    const prod = (await planOf(fixtureStack("prod").config, "prod")).outputs.onRemoval as {
      kept: { what: string; why: string }[];
      removed: string[];
    };
    const sharedObjects = (out: typeof qa) =>
      out.kept.find((k) => k.what.startsWith("the bucket's shared objects"))!.why;
    expect(sharedObjects(qa)).toMatch(/; a rename keeps them, a destroy deletes them with the bucket$/);
    expect(qa.removed).toContain(
      "on a destroy, the bucket acme-platform-qa with every object and every version in it (forceDestroy), the shared ones and the credential files included",
    );
    // prod adopts its bucket: nothing of it goes.
    expect(sharedObjects(prod)).toBe(
      "the platform environment's other pipelines use them: they are created only where absent and never deleted",
    );
    expect(prod.removed.join("\n")).not.toMatch(/the bucket/);
    for (const out of [qa, prod]) {
      expect(out.kept.map((k) => k.what)).toContain(
        "Tools/hub_python_scripts/credentials.ini with its warehouse_connection, and tenant_credentials.txt with the other pipelines' entries",
      );
      expect(out.removed).toContain(
        "this stack's hub tenants' entries (their credentials strings) in Tools/hub_python_scripts/tenant_credentials.txt",
      );
      expect(out.kept.map((k) => k.what)).toContainEqual(
        expect.stringMatching(
          /this client's run tables \(HUB_ACME_MESSAGES, .*HUB_ACME_ROWS_HELD_BACK\) and its function HUB_ACME_OLDEST_XACT\(\)$/,
        ),
      );
    }
  });

  it("qa removes its logs, and keeps the image repository only while another account runs its images", async () => {
    const shared = await planOf(fixtureStack("qa").config, "qa");
    expect(one(shared, "aws:cloudwatch/logGroup:LogGroup").options.retainOnDelete).toBeUndefined();
    const out = shared.outputs.onRemoval as { kept: { what: string; why: string }[]; removed: string[] };
    expect(out.removed).toContain("the log group /ecs/hub-export-acme-qa, with its logs");
    expect(out.kept.find((k) => k.what === "the image repository with every tagged image")!.why).toBe(
      "stacks of account 210987654321 run images from it by digest; delete it by hand once none does. A stack re-created under this name adopts it: set hubExport:image.adoptRepository: true for its first up",
    );
    const alone = await planOf(
      editKey(fixtureStack("qa").config, "image", () => ({})),
      "qa",
    );
    expect((alone.outputs.onRemoval as { removed: string[] }).removed).toContain(
      "the image repository with its images",
    );
    expect(one(alone, "aws:ecr/repository:Repository").options.retainOnDelete).toBeUndefined();
  });
});
