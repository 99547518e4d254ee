/**
 * The roles of the test platform's and the benchmarks' warehouse on their embedded server, which local/warehouseDba.ts
 * creates as the platform's DBA would: the database owner, the HR loader that owns the publish schema, and the admin
 * login that provisions (LOGIN and CREATEROLE, like RDS's master user; its password is the tests' own).
 */
import { PLATFORM_DATABASE_OWNER, type PlatformRoles } from "../local/warehouseDba";
import { SAMPLE_LOADER_ROLE } from "../task/model/sampleData";

export const PLATFORM_ROLES: PlatformRoles = {
  owner: PLATFORM_DATABASE_OWNER,
  admin: { username: "platform_admin", password: "platform-admin-S3cr3t!w4" },
  loaders: [SAMPLE_LOADER_ROLE],
};
