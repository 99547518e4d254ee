import { describe, expect, it } from "vitest";
import { renderTemplate, type PipelineTemplate } from "../../core/template";
import { TEMPLATE_TAGS, REGION_TAGS, findTags } from "../../core/tags";
import { taskOf, pipelineDefinitionSchema } from "../../core/definition";
import { loadPipelineTemplate } from "../../templates";
import { validateStackConfig } from "../../config/validate";
import { HUB_REGIONS, type HubRegion } from "../../core/regions";
import { clientTables, TABLES } from "../../core/naming";
import { UserError } from "../../core/errors";
import { rawConfig } from "../support/rawConfig";

const template = loadPipelineTemplate();
const config = (regions: HubRegion[] = ["US", "EU"], edit: (c: any) => void = () => {}) => {
  const raw = rawConfig(regions);
  edit(raw);
  return validateStackConfig(raw, { source: "test" });
};
const renderError = (t: PipelineTemplate): string[] => {
  try {
    renderTemplate(t, config());
  } catch (err) {
    expect(err).toBeInstanceOf(UserError);
    return (err as UserError).lines;
  }
  throw new Error("expected the render to fail");
};

describe("the pipeline template", () => {
  it("holds every tag of the specification's tag table, and no other", () => {
    expect(new Set(findTags(template.text))).toEqual(new Set(TEMPLATE_TAGS.map((t) => t.tag)));
    expect(TEMPLATE_TAGS).toHaveLength(10);
  });

  it("carries the 11 pipeline parameters with the specification's defaults", () => {
    const params = JSON.parse(template.text).parameters;
    expect(Object.keys(params)).toHaveLength(11);
    expect(params).toMatchObject({
      records_per_hub_message: 1,
      records_per_ers_request: 100,
      idl_date: "1901-01-01T00:00:00",
      system_code: "HRSYS",
      EmpTypeDefault: "Sales",
      EmpGenderDefault: "Not_Declared",
    });
  });

  it("is named with its build number", () => {
    expect(template.fileName).toBe(`HRSYS_Employee_HUB_Pipeline_Baseline_${template.buildNumber}.Json`);
  });
});

describe("renderTemplate", () => {
  const rendered = renderTemplate(template, config());

  it.each(TEMPLATE_TAGS.filter((t) => !t.region || ["US", "EU"].includes(t.region)).map((t) => [t.tag, t] as const))(
    "replaces every occurrence of %s",
    (tag, def) => {
      const expected = def.value(config())!;
      const occurrences = template.text.split(tag).length - 1;
      expect(occurrences).toBeGreaterThan(0);
      expect(rendered.text).not.toContain(tag);
      // every place the tag stood now holds the value (values may also appear elsewhere)
      expect(rendered.text.split(expected).length - 1).toBeGreaterThanOrEqual(occurrences);
    },
  );

  it("fills the parameters and tables of the definition", () => {
    const def = rendered.definition;
    expect(def.parameters).toMatchObject({
      publish_schema: "PLATDB.publish",
      staging_schema: "PLATDB.staging",
      staging_schema_only: "staging",
      job_name: "HRSYS_EMPL_HUB_ACME_202611_QA",
      client_name: "ACME",
    });
    expect(def.connections).toEqual({ storage: "PLAT_S3", database: "PLAT_WAREHOUSE" });
    const tables = clientTables("ACME");
    expect(taskOf(def, "ExtractEmployees").messagesTable).toBe(`staging.${tables.messages}`);
    expect(taskOf(def, "ExtractEmployees").watermarkTable).toBe(`staging.${TABLES.watermark}`);
    expect(taskOf(def, "PublishMessages").statusTable).toBe(`staging.${tables.status}`);
    expect(taskOf(def, "FinishJob").archiveTable).toBe(`staging.${tables.archive}`);
    expect(taskOf(def, "FinishJob").intakeJobTable).toBe(`staging.${TABLES.intakeJob}`);
    expect(taskOf(def, "LoadConfiguration")).toMatchObject({
      apiConfigTable: `staging.${TABLES.apiConfig}`,
      platConfigTable: `staging.${TABLES.platConfig}`,
    });
    expect(pipelineDefinitionSchema.parse(JSON.parse(rendered.text))).toEqual(def);
  });

  it("takes environment-independent parameters from the stack config", () => {
    const def = renderTemplate(
      template,
      config(["US"], (c) => (c.parameters = { records_per_ers_request: 250, EmpTypeDefault: "Field" })),
    ).definition;
    expect(def.parameters.records_per_ers_request).toBe(250);
    expect(def.parameters.EmpTypeDefault).toBe("Field");
    expect(def.parameters.records_per_hub_message).toBe(1);
  });

  const combinations: HubRegion[][] = [];
  for (let mask = 1; mask < 1 << HUB_REGIONS.length; mask++)
    combinations.push(HUB_REGIONS.filter((_, i) => mask & (1 << i)));
  it.each(combinations.map((c) => [c.join("+"), c] as const))(
    "keeps only the publish steps of the regions in use: %s",
    (_name, regions) => {
      const c = config(regions);
      const out = renderTemplate(template, c);
      const steps = taskOf(out.definition, "PublishMessages").steps;
      expect(steps.map((s) => s.region)).toEqual(regions);
      expect(steps.map((s) => s.connection)).toEqual(regions.map((r) => `HUB_MQ_${r}`));
      for (const r of HUB_REGIONS.filter((r) => !regions.includes(r))) expect(out.text).not.toContain(`HUB_MQ_${r}`);
      expect(findTags(out.text)).toEqual([]);
    },
  );

  it("fails on an unknown tag", () => {
    const lines = renderError({ ...template, text: template.text.replace('"EMPL"', '"<DATA_DOMAIN_VALUE>"') });
    expect(lines[0]).toBe(`template ${template.fileName}: cannot render`);
    expect(lines).toContain("  unknown tag <DATA_DOMAIN_VALUE>");
  });

  it("fails on a tag left over: a region tag outside the publish step it belongs to", () => {
    const text = template.text.replace(
      '"dataDomainCode": "EMPL"',
      `"dataDomainCode": "EMPL", "extra": "${REGION_TAGS.APAC}"`,
    );
    const lines = renderError({ ...template, text });
    expect(lines).toContain(`  $.extra: tag ${REGION_TAGS.APAC} left over (no value for it in this stack)`);
  });

  it("fails when the result does not match the definition schema", () => {
    const lines = renderError({
      ...template,
      text: template.text.replace('"type": "SendEntities"', '"type": "SendEverything"'),
    });
    expect(lines.some((l) => l.startsWith("  $.tasks.3"))).toBe(true);
  });

  it("fails when a region with tenants has no publish step in the template", () => {
    const doc = JSON.parse(template.text);
    doc.tasks.find((t: { type: string }) => t.type === "PublishMessages").steps = doc.tasks
      .find((t: { type: string }) => t.type === "PublishMessages")
      .steps.filter((s: { region: string }) => s.region !== "EU");
    const text = JSON.stringify(doc).replace(/"<HUB_MQ_CONNECTION_FOR_EU_REGION>"/g, '""');
    expect(renderError({ ...template, text })).toContain(
      '  task "Publish Hub Messages to Queue" has no step for region EU, which has tenants',
    );
  });

  it("fails on a template that is not JSON, or has no publish task", () => {
    expect(renderError({ ...template, text: "{ not json" })[1]).toMatch(/^ {2}not valid JSON/);
    expect(
      renderError({ ...template, text: template.text.replace("Publish Hub Messages to Queue", "Publish") }),
    ).toContain('  has no task "Publish Hub Messages to Queue" with steps');
  });
});
