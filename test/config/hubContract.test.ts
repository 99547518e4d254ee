/** `hubExport:hubContract`: the assumed hub calls as stack config, with today's behaviour as the default. */
import { describe, expect, it } from "vitest";
import { validateStackConfig, ConfigError } from "../../config/validate";
import { HUB_CONTRACT_DEFAULTS } from "../../core/hubContract";
import { renderTemplate } from "../../core/template";
import { loadPipelineTemplate } from "../../templates";
import { rawConfig } from "../support/rawConfig";

function validate(hubContract: unknown) {
  const raw = rawConfig() as Record<string, unknown>;
  if (hubContract !== undefined) raw.hubContract = hubContract;
  return validateStackConfig(raw, { source: "test" });
}

function problems(hubContract: unknown): string[] {
  try {
    validate(hubContract);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).lines.slice(1);
  }
  return [];
}

describe("hubExport:hubContract", () => {
  it("defaults: every call on, at its assumed path; an ERS failure stops the run, the HRSYS intake report's is only recorded", () => {
    expect(validate(undefined).hubContract).toEqual(HUB_CONTRACT_DEFAULTS);
    expect(HUB_CONTRACT_DEFAULTS).toEqual({
      ers: { enabled: true, path: "entities?tenantId={tenantId}", onFailure: "stop" },
      intakeReport: { enabled: true, path: "intakeJobs?tenantId={tenantId}", onFailure: "record" },
      queueMessage: {
        enabled: true,
        names: {
          transactionId: "transactionId",
          tenantId: "tenantId",
          systemCode: "systemCode",
          dataDomainCode: "dataDomainCode",
          entityName: "entityName",
          recordCount: "recordCount",
        },
        onFailure: "record",
      },
    });
  });

  it("serves a hub without an intake endpoint by config alone: the report off, or best-effort", () => {
    expect(validate({ intakeReport: { enabled: false } }).hubContract.intakeReport).toEqual({
      ...HUB_CONTRACT_DEFAULTS.intakeReport,
      enabled: false,
    });
    expect(validate({ intakeReport: { onFailure: "record" } }).hubContract.intakeReport.onFailure).toBe("record");
  });

  it("takes other paths and property names, and fills in the rest", () => {
    const c = validate({
      ers: { path: "v2/entities/{tenantId}" },
      queueMessage: { names: { tenantId: "hubTenantId" } },
    }).hubContract;
    expect(c.ers).toEqual({ enabled: true, path: "v2/entities/{tenantId}", onFailure: "stop" });
    expect(c.queueMessage.names).toEqual({ ...HUB_CONTRACT_DEFAULTS.queueMessage.names, tenantId: "hubTenantId" });
  });

  it.each([
    [
      "a setting of a call that is off",
      { ers: { enabled: false, onFailure: "record" } },
      "hubExport:hubContract.ers.onFailure: contradicts enabled: false (the call is never made); remove it or enable the call",
    ],
    [
      "a path of a report that is off",
      { intakeReport: { enabled: false, path: "jobs" } },
      "hubExport:hubContract.intakeReport.path: contradicts enabled: false",
    ],
    [
      "property names while properties are off",
      { queueMessage: { enabled: false, names: { tenantId: "t" } } },
      "hubExport:hubContract.queueMessage.names: contradicts enabled: false (no properties are sent)",
    ],
    [
      "two properties under one name",
      { queueMessage: { names: { tenantId: "id", transactionId: "id" } } },
      "hubExport:hubContract.queueMessage.names.tenantId: 'id' is already the name of transactionId: two properties cannot share a name",
    ],
    [
      "a renamed property onto another's default name",
      { queueMessage: { names: { tenantId: "systemCode" } } },
      "hubExport:hubContract.queueMessage.names.systemCode: 'systemCode' is already the name of tenantId",
    ],
    [
      "an absolute path",
      { ers: { path: "/ers/entities" } },
      "hubExport:hubContract.ers.path: must be relative to the API URL",
    ],
    [
      "a URL as path",
      { ers: { path: "https://other.example.com/entities" } },
      "hubExport:hubContract.ers.path: must be relative to the API URL",
    ],
    [
      "an unknown placeholder",
      { intakeReport: { path: "jobs/{jobName}" } },
      "hubExport:hubContract.intakeReport.path: may use only the placeholder {tenantId}",
    ],
    [
      "an unknown failure mode",
      { ers: { onFailure: "ignore" } },
      "hubExport:hubContract.ers.onFailure: must be one of stop, record",
    ],
    ["an unknown call", { cfg: { enabled: false } }, "hubExport:hubContract.cfg: is not a known key"],
    [
      "an unknown property",
      { queueMessage: { names: { employeeId: "e" } } },
      "hubExport:hubContract.queueMessage.names.employeeId: is not a known key",
    ],
  ])("refuses %s", (_, contract, expected) => {
    const lines = problems(contract);
    expect(
      lines.some((l) => l.startsWith(expected)),
      `expected a line starting with\n  ${expected}\ngot\n  ${lines.join("\n  ")}`,
    ).toBe(true);
  });

  it("travels in the rendered pipeline definition, which the task reads", () => {
    const config = validate({ intakeReport: { enabled: false }, ers: { onFailure: "record" } });
    const { definition } = renderTemplate(loadPipelineTemplate(), config);
    expect(definition.hubContract).toEqual({
      ...HUB_CONTRACT_DEFAULTS,
      intakeReport: { ...HUB_CONTRACT_DEFAULTS.intakeReport, enabled: false },
      ers: { ...HUB_CONTRACT_DEFAULTS.ers, onFailure: "record" },
    });
  });
});
