/**
 * The hub team's checklist for a stack: every hub-side item of the specification, each saying what this project did
 * automatically and what a person must do. Pure: from validated config and what the plan computes. `hub-export hub
 * checklist`, the stack output `hubChecklist` and the bucket's hub-configuration folder carry it, as Markdown and JSON.
 */
import type { StackConfig } from "./stackConfig";
import { DATA_DOMAIN_CODE } from "./hubContract";
import {
  BUCKET_FOLDERS,
  HUB_CONFIGURATION_FILES,
  SCRIPT_FILES,
  hubConfigurationFolder,
  renderedPipelineKey,
  templateFileName,
} from "./naming";
import { routingRulesFor } from "./routingRules";
import { sortRegions, type HubRegion } from "./regions";
import { CLS_TABLE, BUSINESS_OBJECTS } from "./clsTable";

/** The hub version that introduced system code HRSYS. */
export const MIN_HUB_VERSION = "V9";
/** The EMPL data domain's target systems of the specification. */
export const TARGET_SYSTEMS = ["HUBSYNC", "HUBOPT"] as const;
/** The cfg wrapper types the hub team loads. */
export const CFG_WRAPPER_TYPES = ["sysInt", "CLS", "ERS"] as const;

export interface ChecklistItem {
  id: string;
  title: string;
  /** What `pulumi up` (or the export task) does for this item. */
  automated: string[];
  /** What a person (the hub team, the service provider) must do. */
  manual: string[];
}

export interface HubChecklist {
  stack: string;
  clientName: string;
  environment: string;
  /** The hub environment of each hub region in use. */
  hubEnvironments: Partial<Record<HubRegion, string>>;
  items: ChecklistItem[];
}

/** What is known about the CLS sheets of the stack. */
export interface ChecklistCls {
  /** Rows of the built sheet; undefined when the stack has no `cls` config. */
  rows?: number;
}

export function hubChecklist(config: StackConfig, stack: string, cls: ChecklistCls = {}): HubChecklist {
  const systemCode = config.parameters.system_code;
  const hubConfig = `s3://${config.bucket.name}/${hubConfigurationFolder(config.jobName)}`;
  const targets = TARGET_SYSTEMS.join(" and ");
  const regions = sortRegions([...new Set(config.hubTenants.map((t) => t.hubRegion))]);
  const hubEnvironments = Object.fromEntries(
    regions.map((r) => [r, config.hub.environments[r]?.environmentName ?? "(no environment)"]),
  ) as Partial<Record<HubRegion, string>>;
  const environmentList = regions.map((r) => `${hubEnvironments[r]} (${r})`).join(", ");
  const hubTenantCodes = config.hubTenants.map((t) => t.hubTenantCode).join(", ");
  const items: ChecklistItem[] = [
    {
      id: "hub-version",
      title: `Hub version ${MIN_HUB_VERSION} or later for system code ${systemCode}`,
      automated: [
        `Every message, ERS request and intake-job report carries systemCode ${systemCode} (pipeline parameter system_code).`,
      ],
      manual: [
        `Confirm that hub environment${regions.length === 1 ? "" : "s"} ${environmentList} run${regions.length === 1 ? "s" : ""} ${MIN_HUB_VERSION} or later: system code ${systemCode} exists only from ${MIN_HUB_VERSION} on.`,
      ],
    },
    ...config.hubTenants.map((t) => ({
      id: `tenant-${t.hubTenantCode}`,
      title: `Hub tenant ${t.hubTenantCode} (${t.hubTenantId}, region ${t.hubRegion}): ${DATA_DOMAIN_CODE} with source ${systemCode}, targets ${targets}`,
      automated: [
        // Platform tenants are not named: adding one changes only its HUB_PLAT_CONFIG row, not what the hub team does.
        `HUB_API_CONFIG rows (ERS, CFG, HRSYS) for hub environment ${hubEnvironments[t.hubRegion]}; the HUB_PLAT_CONFIG rows of the platform tenants feeding it, hub destination ${config.queues[t.hubRegion]?.connectionName ?? "(no queue connection)"}.`,
        `The tenant's credentials string in ${SCRIPT_FILES.tenantCredentials}.`,
      ],
      manual: [
        `Configure tenant ${t.hubTenantCode} for data domain ${DATA_DOMAIN_CODE}: source system ${systemCode}; target systems ${targets}.`,
      ],
    })),
    {
      id: "cfg-wrapper-data",
      title: `cfg wrapper data for ${CFG_WRAPPER_TYPES.join(", ")}`,
      automated: ["Nothing: the cfg API has no call for wrapper data that this project knows of."],
      manual: [`Load the cfg wrapper data of wrapper types ${CFG_WRAPPER_TYPES.join(", ")} for ${hubTenantCodes}.`],
    },
    clsItem(config, hubConfig, cls),
    {
      id: "routing-rules",
      title: "Routing rules posted (cfg_routing_rule)",
      automated: config.hubTenants.map(
        (t) =>
          `Tenant ${t.hubTenantCode} (${t.hubTenantId}): ${routingRulesFor(t).length} rules posted with POST routingRules to the CFG API of ${hubEnvironments[t.hubRegion]}; ${t.routingRules ? "custom rule set from the stack config" : "the specification's rule set"}.`,
      ),
      manual: [
        `Check in the hub's cfg_routing_rule table that each tenant has these rules; the ${DATA_DOMAIN_CODE} rules of hub versions up to V8 stay as they are.`,
      ],
    },
    {
      id: "service-provider-storage",
      title: "Service provider: the cloud-storage setup for the export",
      automated: [
        `Bucket ${config.bucket.name} (${config.bucket.create ? "created" : "adopted"}), connection ${config.bucket.connectionName}, with ${BUCKET_FOLDERS.templates} (the tagged pipeline template ${templateFileName("<BuildNumber>")}, as procedure step 1 downloads it), ${renderedPipelineKey(config.jobName)} (this job's rendered pipeline, its tags replaced: what the task runs), ${BUCKET_FOLDERS.scripts} (the scripts folder and credential files, SSE-KMS) and ${hubConfigurationFolder(config.jobName)} (this job's hub configuration).`,
        "The export task reads only those folders, with its own role.",
      ],
      manual: ["Agree the storage setup with the service provider: bucket, folders, encryption and who reads them."],
    },
    {
      id: "service-provider-credentials-format",
      title: "Service provider: the format of the credentials string",
      automated: [
        `Each tenant's credentials string is built as {'clientId': '<id>', 'clientSecret': '<secret>'}, Base64-encoded with == appended, into ${SCRIPT_FILES.tenantCredentials}; the same string is the Basic header value of the hub APIs.`,
      ],
      manual: [
        "Confirm this format with the service provider; `hub-export credentials-string` prints one for a check.",
      ],
    },
  ];
  return { stack, clientName: config.clientName, environment: config.environment, hubEnvironments, items };
}

function clsItem(config: StackConfig, hubConfig: string, cls: ChecklistCls): ChecklistItem {
  const csv = hubConfig + HUB_CONFIGURATION_FILES.clsCsv;
  const xlsx = hubConfig + HUB_CONFIGURATION_FILES.clsXlsx;
  const item = { id: "cls-code-lists", title: `CLS code lists (${CLS_TABLE.length} code fields, SYSTEM EXTERNAL)` };
  if (!config.cls) {
    return {
      ...item,
      automated: [
        "Nothing yet: the stack has no hubExport:cls config, so no load sheet is built and runs do not check their codes.",
      ],
      manual: [
        `Export the business objects ${BUSINESS_OBJECTS.join(", ")} from the HR system (Integration IDs, then export to spreadsheet) into one folder.`,
        "Set hubExport:cls.exports to that folder and run pulumi up: the load sheet is built and uploaded for the hub team.",
      ],
    };
  }
  return {
    ...item,
    automated: [
      `Load sheet built from the HR system's exports in ${config.cls.exports}${cls.rows === undefined ? "" : ` (${cls.rows} rows)`}, uploaded to ${csv} and ${xlsx}.`,
      `Every run compares the codes it sends with ${csv} before publishing; unknown codes are ${config.cls.strict ? "reported and the affected employees' messages held back (status HELD_BACK) until the sheet has them" : "reported and the run goes on"}.`,
    ],
    manual: [
      `Load ${xlsx} (or the CSV) into the CLS table of ${config.hubTenants.map((t) => t.hubTenantCode).join(", ")}; load it again after each update of the exports.`,
    ],
  };
}

export function checklistMarkdown(list: HubChecklist): string {
  const hub = Object.entries(list.hubEnvironments).map(([region, environment]) => `${environment} (${region})`);
  const lines = [
    `# Hub checklist: ${list.clientName} ${list.environment} (stack ${list.stack}, hub ${hub.join(", ")})`,
    "",
    "Each item says what this project does automatically and what a person must do on the hub side.",
  ];
  list.items.forEach((item, i) => {
    lines.push(
      "",
      `## ${i + 1}. ${item.title}`,
      "",
      "Automated:",
      ...item.automated.map((a) => `- ${a}`),
      "",
      "To do by hand:",
      ...item.manual.map((m) => `- [ ] ${m}`),
    );
  });
  return lines.join("\n") + "\n";
}
