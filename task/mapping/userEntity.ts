/**
 * The User entity of a hub message, as SQL: one json_build_object per entity, built set-based in PostgreSQL.
 * A User carries its sub-entities UserAddress, UserCommunication, UserEducation, UserDependent and UserContact as
 * arrays (docs/hub-contract.md). Field names are the CLS table's (PascalCase).
 */
import { PUBLISH_TABLES } from "../model/schema";
import { STATUS_CODES } from "./codes";

/** `CASE WHEN <flag> THEN 'ACTV' ELSE 'INAC' END` */
export const statusCode = (flag: string) =>
  `CASE WHEN ${flag} THEN '${STATUS_CODES.active}' ELSE '${STATUS_CODES.inactive}' END`;

/** [JSON field, SQL expression over alias x] */
type Fields = readonly (readonly [string, string])[];

export interface SubEntity {
  /** The array's name in the User. */
  name: "UserAddress" | "UserCommunication" | "UserEducation" | "UserDependent" | "UserContact";
  table: string;
  /** Its key: the order of the array. */
  key: string;
  fields: Fields;
}

export const SUB_ENTITIES: readonly SubEntity[] = [
  {
    name: "UserAddress",
    table: PUBLISH_TABLES.address,
    key: "address_id",
    fields: [
      ["AddressId", "x.address_id"],
      ["AddressType", "x.usage_type"],
      ["AddressLine1", "x.line1"],
      ["AddressLine2", "x.line2"],
      ["City", "x.city"],
      ["Region", "x.region"],
      ["PostalCode", "x.postal_code"],
      ["CountryCode", "x.country_code"],
      ["Status", statusCode("x.is_active")],
    ],
  },
  {
    name: "UserCommunication",
    table: PUBLISH_TABLES.communication,
    key: "communication_id",
    fields: [
      ["CommunicationId", "x.communication_id"],
      ["CommunicationType", "x.communication_type"],
      ["Value", "x.value"],
      ["IsPrimary", "x.is_primary"],
      ["Status", statusCode("x.is_active")],
    ],
  },
  {
    name: "UserEducation",
    table: PUBLISH_TABLES.education,
    key: "education_id",
    fields: [
      ["EducationId", "x.education_id"],
      ["Institution", "x.institution"],
      ["Degree", "x.degree"],
      ["FieldOfStudy", "x.field_of_study"],
      ["CountryCode", "x.country_code"],
      ["CompletedOn", "x.completed_on"],
      ["Status", statusCode("x.is_active")],
    ],
  },
  {
    name: "UserDependent",
    table: PUBLISH_TABLES.dependent,
    key: "dependent_id",
    fields: [
      ["DependentId", "x.dependent_id"],
      ["FirstName", "x.first_name"],
      ["LastName", "x.last_name"],
      ["Gender", "x.gender"],
      ["Relationship", "x.relationship"],
      ["BirthDate", "x.birth_date"],
      ["CountryCode", "x.country_code"],
      ["Status", statusCode("x.is_active")],
    ],
  },
  {
    name: "UserContact",
    table: PUBLISH_TABLES.contact,
    key: "contact_id",
    fields: [
      ["ContactId", "x.contact_id"],
      ["FirstName", "x.first_name"],
      ["LastName", "x.last_name"],
      ["Relationship", "x.relationship"],
      ["Phone", "x.phone"],
      ["Email", "x.email"],
      ["CountryCode", "x.country_code"],
      ["Status", statusCode("x.is_active")],
    ],
  },
];

/**
 * The User's own fields over alias e (the employee row). `$typeDefault` and `$genderDefault` are the SQL
 * placeholders of EmpTypeDefault and EmpGenderDefault.
 */
export function userFields(typeDefault: string, genderDefault: string): Fields {
  return [
    ["UserId", "e.employee_id"],
    ["FirstName", "e.first_name"],
    ["LastName", "e.last_name"],
    ["PreferredName", "e.preferred_name"],
    ["Email", "e.email"],
    ["CountryCode", "e.country_code"],
    ["UserType", `coalesce(e.job_family, ${typeDefault})`],
    ["Gender", `coalesce(e.gender, ${genderDefault})`],
    ["Status", statusCode("e.is_active")],
    ["EmployeeStatusCode", "e.worker_status"],
    ["RoleCode", "e.job_profile"],
    ["HireDate", "e.hire_date"],
    ["TerminationDate", "e.termination_date"],
    ["PlatRegion", "e.plat_region"],
    ["ChangedAt", "e.changed_at"],
  ];
}

/**
 * A SELECT list naming each field: a record of it turns into compact JSON with row_to_json or json_agg, faster and
 * smaller than json_build_object (whose output pads every colon with spaces).
 */
export function selectFields(fields: Fields): string {
  return fields.map(([k, v]) => `${v} AS "${k}"`).join(", ");
}
