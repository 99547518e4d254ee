/**
 * The code fields of the specification's CLS table (SYSTEM EXTERNAL). Values of business objects (Country, Job
 * Family, Gender, Job Profile, Communication Usage Type, Related Person Relationship) are the HR system's own and
 * pass through; the lists below are the ones the specification fixes.
 */
export const STATUS_CODES = { active: "ACTV", inactive: "INAC" } as const;

/** User.EmployeeStatusCode: the worker status of the HR system. */
export const EMPLOYEE_STATUS_CODES = ["ACTV", "RETIRED", "TERM", "TERM_INV", "REG_TERM", "HIRE_RESC", "NOT_RETURN", "RETURN_UNK"] as const;

/** UserCommunication.CommunicationType. */
export const COMMUNICATION_TYPES = ["MOBILE", "PHONE", "EMAIL", "INST_MESS", "WEB_ADDR"] as const;

/** Every code field of the CLS table, per entity, with where its value comes from in the publish schema. */
export const CLS_CODE_FIELDS = {
  User: { CountryCode: "employee.country_code", UserType: "employee.job_family (EmpTypeDefault when null)", Gender: "employee.gender (EmpGenderDefault when null)", Status: "employee.is_active", EmployeeStatusCode: "employee.worker_status", RoleCode: "employee.job_profile" },
  UserAddress: { AddressType: "employee_address.usage_type", CountryCode: "employee_address.country_code", Status: "employee_address.is_active" },
  UserCommunication: { CommunicationType: "employee_communication.communication_type", Status: "employee_communication.is_active" },
  UserEducation: { Status: "employee_education.is_active", CountryCode: "employee_education.country_code" },
  UserDependent: { Gender: "employee_dependent.gender", Status: "employee_dependent.is_active", Relationship: "employee_dependent.relationship", CountryCode: "employee_dependent.country_code" },
  UserContact: { CountryCode: "employee_contact.country_code", Status: "employee_contact.is_active", Relationship: "employee_contact.relationship" },
} as const;
