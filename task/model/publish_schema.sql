-- The publish schema: the HR system's employee data as the export task reads it (task/model/README.md).
-- <PUBLISH_SCHEMA> is replaced with the schema name (publish_schema without its database). Idempotent.
-- Codes are the HR system's values of the CLS table's business objects; the export passes them through.

CREATE SCHEMA IF NOT EXISTS <PUBLISH_SCHEMA>;

CREATE TABLE IF NOT EXISTS <PUBLISH_SCHEMA>.employee (
  employee_id      text NOT NULL,
  first_name       text NOT NULL,
  last_name        text NOT NULL,
  preferred_name   text NULL,
  email            text NULL,
  country_code     text NOT NULL,                 -- business object Country (ISO 3166 alpha-2)
  plat_region      text NOT NULL,                 -- platform region: the tenant whose HUB_PLAT_CONFIG.plat_region matches exports it
  job_family       text NULL,                     -- business object Job Family → User.UserType (EmpTypeDefault when null)
  gender           text NULL,                     -- business object Gender (EmpGenderDefault when null)
  worker_status    text NOT NULL CHECK (worker_status IN ('ACTV', 'RETIRED', 'TERM', 'TERM_INV', 'REG_TERM', 'HIRE_RESC', 'NOT_RETURN', 'RETURN_UNK')),
  job_profile      text NULL,                     -- business object Job Profile → User.RoleCode
  hire_date        date NOT NULL,
  termination_date date NULL,
  is_active        boolean NOT NULL,              -- → User.Status ACTV / INAC
  changed_at       timestamp NOT NULL
);

CREATE TABLE IF NOT EXISTS <PUBLISH_SCHEMA>.employee_address (
  address_id   text NOT NULL,
  employee_id  text NOT NULL,
  usage_type   text NOT NULL,                     -- business object Communication Usage Type → AddressType (HOME, WORK, ...)
  line1        text NOT NULL,
  line2        text NULL,
  city         text NOT NULL,
  region       text NULL,
  postal_code  text NULL,
  country_code text NOT NULL,
  is_active    boolean NOT NULL,
  changed_at   timestamp NOT NULL
);

CREATE TABLE IF NOT EXISTS <PUBLISH_SCHEMA>.employee_communication (
  communication_id   text NOT NULL,
  employee_id        text NOT NULL,
  communication_type text NOT NULL CHECK (communication_type IN ('MOBILE', 'PHONE', 'EMAIL', 'INST_MESS', 'WEB_ADDR')),
  value              text NOT NULL,
  is_primary         boolean NOT NULL DEFAULT false,
  is_active          boolean NOT NULL,
  changed_at         timestamp NOT NULL
);

CREATE TABLE IF NOT EXISTS <PUBLISH_SCHEMA>.employee_education (
  education_id   text NOT NULL,
  employee_id    text NOT NULL,
  institution    text NOT NULL,
  degree         text NULL,
  field_of_study text NULL,
  country_code   text NULL,
  completed_on   date NULL,
  is_active      boolean NOT NULL,
  changed_at     timestamp NOT NULL
);

CREATE TABLE IF NOT EXISTS <PUBLISH_SCHEMA>.employee_dependent (
  dependent_id  text NOT NULL,
  employee_id   text NOT NULL,
  first_name    text NOT NULL,
  last_name     text NOT NULL,
  gender        text NULL,                        -- business object Gender
  relationship  text NOT NULL,                    -- business object Related Person Relationship
  birth_date    date NULL,
  country_code  text NULL,
  is_active     boolean NOT NULL,
  changed_at    timestamp NOT NULL
);

CREATE TABLE IF NOT EXISTS <PUBLISH_SCHEMA>.employee_contact (
  contact_id    text NOT NULL,
  employee_id   text NOT NULL,
  first_name    text NOT NULL,
  last_name     text NOT NULL,
  relationship  text NOT NULL,                    -- business object Related Person Relationship
  phone         text NULL,
  email         text NULL,
  country_code  text NULL,
  is_active     boolean NOT NULL,
  changed_at    timestamp NOT NULL
);

-- @indexes: the extract walks employees by id, reads sub-entities by (employee, id) in order, and finds changes by
-- changed_at. Loaders create these last.
-- Keys are unique indexes rather than constraints, so that a bulk load can build them after loading.
CREATE UNIQUE INDEX IF NOT EXISTS employee_pkey ON <PUBLISH_SCHEMA>.employee (employee_id);
CREATE UNIQUE INDEX IF NOT EXISTS employee_address_pkey ON <PUBLISH_SCHEMA>.employee_address (address_id);
CREATE UNIQUE INDEX IF NOT EXISTS employee_communication_pkey ON <PUBLISH_SCHEMA>.employee_communication (communication_id);
CREATE UNIQUE INDEX IF NOT EXISTS employee_education_pkey ON <PUBLISH_SCHEMA>.employee_education (education_id);
CREATE UNIQUE INDEX IF NOT EXISTS employee_dependent_pkey ON <PUBLISH_SCHEMA>.employee_dependent (dependent_id);
CREATE UNIQUE INDEX IF NOT EXISTS employee_contact_pkey ON <PUBLISH_SCHEMA>.employee_contact (contact_id);
CREATE INDEX IF NOT EXISTS employee_changed_idx ON <PUBLISH_SCHEMA>.employee (changed_at);
CREATE INDEX IF NOT EXISTS employee_address_employee_idx ON <PUBLISH_SCHEMA>.employee_address (employee_id, address_id);
CREATE INDEX IF NOT EXISTS employee_address_changed_idx ON <PUBLISH_SCHEMA>.employee_address (changed_at);
CREATE INDEX IF NOT EXISTS employee_communication_employee_idx ON <PUBLISH_SCHEMA>.employee_communication (employee_id, communication_id);
CREATE INDEX IF NOT EXISTS employee_communication_changed_idx ON <PUBLISH_SCHEMA>.employee_communication (changed_at);
CREATE INDEX IF NOT EXISTS employee_education_employee_idx ON <PUBLISH_SCHEMA>.employee_education (employee_id, education_id);
CREATE INDEX IF NOT EXISTS employee_education_changed_idx ON <PUBLISH_SCHEMA>.employee_education (changed_at);
CREATE INDEX IF NOT EXISTS employee_dependent_employee_idx ON <PUBLISH_SCHEMA>.employee_dependent (employee_id, dependent_id);
CREATE INDEX IF NOT EXISTS employee_dependent_changed_idx ON <PUBLISH_SCHEMA>.employee_dependent (changed_at);
CREATE INDEX IF NOT EXISTS employee_contact_employee_idx ON <PUBLISH_SCHEMA>.employee_contact (employee_id, contact_id);
CREATE INDEX IF NOT EXISTS employee_contact_changed_idx ON <PUBLISH_SCHEMA>.employee_contact (changed_at);
