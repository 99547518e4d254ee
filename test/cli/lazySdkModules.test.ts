/** The SDK's function serializer still works once its TypeScript and arborist load on first use (cli/lazySdkModules.ts). */
import Module from "node:module";
import path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { describe, expect, it } from "vitest";
import { loadSdkSerializerLazily } from "../../cli/lazySdkModules";

describe("the SDK's serializer modules, loaded on first use", () => {
  it("answer as the real modules do, and a function still serializes", async () => {
    loadSdkSerializerLazily();
    const sdk = path.dirname(require.resolve("@pulumi/pulumi/package.json"));
    const fromClosure = Module.createRequire(path.join(sdk, "runtime", "closure", "codePaths.js"));
    const lazy = fromClosure("@npmcli/arborist") as { Arborist: unknown; __esModule: boolean };
    expect(lazy.__esModule).toBe(true);
    expect(lazy.Arborist).toBe((fromClosure("@npmcli/arborist") as { Arborist: unknown }).Arborist);
    expect(lazy.Arborist).toBe((require("@npmcli/arborist") as { Arborist: unknown }).Arborist);
    const ts = fromClosure("../../typescript-shim") as { version: string };
    expect(ts.version).toBe((require("typescript") as { version: string }).version);
    // Elsewhere, a module is the module itself.
    expect(Module.createRequire(__filename)("@npmcli/arborist")).toBe(require("@npmcli/arborist"));
    const answer = 42;
    const serialized = await pulumi.runtime.serializeFunction(() => answer);
    expect(serialized.text).toContain("42");
  });
});
