/**
 * The specification's CLS table: the code-list entries loaded in the hub, one row per code field. It is the single
 * source of truth for the load sheet (cls build), the unknown-code check of a run, the hub team's checklist and the
 * fixed code lists the export sends. For every row SYSTEM is EXTERNAL.
 */

/** SYSTEM of every CLS row. */
export const CLS_SYSTEM = "EXTERNAL";

/** The HR system's business objects whose values are exported (Integration IDs, then export to spreadsheet). */
export const BUSINESS_OBJECTS = [
  "Country",
  "Job Family",
  "Gender",
  "Job Profile",
  "Communication Usage Type",
  "Related Person Relationship",
] as const;
export type BusinessObject = (typeof BUSINESS_OBJECTS)[number];

/** A code with its description, as loaded in the CLS table. */
export interface CodeValue {
  code: string;
  description: string;
}

/** The fixed lists of the specification. The descriptions are ours: the specification gives the codes only. */
export const STATUS: readonly CodeValue[] = [
  { code: "ACTV", description: "Active" },
  { code: "INAC", description: "Inactive" },
];
export const EMPLOYEE_STATUS: readonly CodeValue[] = [
  { code: "ACTV", description: "Active" },
  { code: "RETIRED", description: "Retired" },
  { code: "TERM", description: "Terminated" },
  { code: "TERM_INV", description: "Terminated, involuntary" },
  { code: "REG_TERM", description: "Regretted termination" },
  { code: "HIRE_RESC", description: "Hire rescinded" },
  { code: "NOT_RETURN", description: "Not returning" },
  { code: "RETURN_UNK", description: "Return unknown" },
];
export const COMMUNICATION_TYPE: readonly CodeValue[] = [
  { code: "MOBILE", description: "Mobile phone" },
  { code: "PHONE", description: "Phone" },
  { code: "EMAIL", description: "E-mail" },
  { code: "INST_MESS", description: "Instant messaging" },
  { code: "WEB_ADDR", description: "Web address" },
];

export type ClsEntity =
  "User" | "UserAddress" | "UserCommunication" | "UserEducation" | "UserDependent" | "UserContact";

export type ClsSource = { businessObject: BusinessObject } | { fixed: readonly CodeValue[] };

export interface ClsRow {
  entity: ClsEntity;
  field: string;
  source: ClsSource;
}

const bo = (businessObject: BusinessObject): ClsSource => ({ businessObject });
const fixed = (values: readonly CodeValue[]): ClsSource => ({ fixed: values });

/** The 20 rows, in the specification's order. */
export const CLS_TABLE: readonly ClsRow[] = [
  { entity: "User", field: "CountryCode", source: bo("Country") },
  { entity: "User", field: "UserType", source: bo("Job Family") },
  { entity: "User", field: "Gender", source: bo("Gender") },
  { entity: "User", field: "Status", source: fixed(STATUS) },
  { entity: "User", field: "EmployeeStatusCode", source: fixed(EMPLOYEE_STATUS) },
  { entity: "User", field: "RoleCode", source: bo("Job Profile") },
  { entity: "UserAddress", field: "AddressType", source: bo("Communication Usage Type") },
  { entity: "UserAddress", field: "CountryCode", source: bo("Country") },
  { entity: "UserAddress", field: "Status", source: fixed(STATUS) },
  { entity: "UserCommunication", field: "CommunicationType", source: fixed(COMMUNICATION_TYPE) },
  { entity: "UserCommunication", field: "Status", source: fixed(STATUS) },
  { entity: "UserEducation", field: "Status", source: fixed(STATUS) },
  { entity: "UserEducation", field: "CountryCode", source: bo("Country") },
  { entity: "UserDependent", field: "Gender", source: bo("Gender") },
  { entity: "UserDependent", field: "Status", source: fixed(STATUS) },
  { entity: "UserDependent", field: "Relationship", source: bo("Related Person Relationship") },
  { entity: "UserDependent", field: "CountryCode", source: bo("Country") },
  { entity: "UserContact", field: "CountryCode", source: bo("Country") },
  { entity: "UserContact", field: "Status", source: fixed(STATUS) },
  { entity: "UserContact", field: "Relationship", source: bo("Related Person Relationship") },
];

/** `User.RoleCode`: how a code field is named in reports. */
export function fieldName(row: Pick<ClsRow, "entity" | "field">): string {
  return `${row.entity}.${row.field}`;
}

/** The CLS entities in table order, each with its code fields. */
export function fieldsByEntity(): Map<ClsEntity, string[]> {
  const out = new Map<ClsEntity, string[]>();
  for (const row of CLS_TABLE) out.set(row.entity, [...(out.get(row.entity) ?? []), row.field]);
  return out;
}
