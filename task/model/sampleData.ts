/**
 * Realistic sample employees for tests, the benchmark and the embedded default. Generated inside PostgreSQL with
 * generate_series and a seeded hash (hashint8extended), so a million employees load in seconds, and the same seed
 * gives the same data on any server.
 */
import type { ClientBase, Pool, PoolClient } from "pg";
import { PUBLISH_TABLES, publishSchemaSql, sqlIdentifier } from "./schema";
import type { BusinessObject, CodeValue } from "../../core/clsTable";
import { PARAMETER_DEFAULTS } from "../../core/parameters";

/** Countries per platform region, used when the caller gives none (every one a code of the sample Country sheet). */
const APAC_COUNTRIES = ["JP", "AU", "SG", "IN"];

export const DEFAULT_COUNTRIES: Record<string, string[]> = {
  US: ["US", "CA", "MX"],
  EU: ["DE", "FR", "GB", "NL", "ES"],
  UK: ["GB"],
  APAC: APAC_COUNTRIES,
  AP: APAC_COUNTRIES,
};

const values = (pairs: Record<string, string>): CodeValue[] =>
  Object.entries(pairs).map(([code, description]) => ({ code, description }));

/**
 * The HR system's business objects as the sample data uses them: local mode builds its CLS load sheet from these,
 * and cls/samples/ holds them as exports. Gender includes EmpGenderDefault, which the export sends when the gender is null.
 */
export const SAMPLE_BUSINESS_OBJECTS: Record<BusinessObject, CodeValue[]> = {
  Country: values({
    US: "United States of America",
    CA: "Canada",
    MX: "Mexico",
    DE: "Germany",
    FR: "France",
    GB: "United Kingdom",
    NL: "Netherlands",
    ES: "Spain",
    JP: "Japan",
    AU: "Australia",
    SG: "Singapore",
    IN: "India",
  }),
  "Job Family": values({
    Sales: "Sales",
    Engineering: "Engineering",
    Finance: "Finance",
    Operations: "Operations",
    Marketing: "Marketing",
    Support: "Customer Support",
    Legal: "Legal",
    HR: "Human Resources",
  }),
  Gender: values({
    Male: "Male",
    Female: "Female",
    Non_Binary: "Non-binary",
    [PARAMETER_DEFAULTS.EmpGenderDefault]: "Not declared",
  }),
  "Job Profile": values({
    SALES_REP: "Sales Representative",
    ACCOUNT_MGR: "Account Manager",
    SW_ENGINEER: "Software Engineer",
    SR_SW_ENGINEER: "Senior Software Engineer",
    ACCOUNTANT: "Accountant",
    OPS_ANALYST: "Operations Analyst",
    MARKETING_SPEC: "Marketing Specialist",
    SUPPORT_AGENT: "Support Agent",
    COUNSEL: "Legal Counsel",
    HR_PARTNER: "HR Business Partner",
  }),
  "Communication Usage Type": values({ HOME: "Home", WORK: "Work", MAILING: "Mailing" }),
  "Related Person Relationship": values({
    SPOUSE: "Spouse",
    CHILD: "Child",
    PARENT: "Parent",
    SIBLING: "Sibling",
    PARTNER: "Domestic Partner",
    FRIEND: "Friend",
  }),
};
const codes = (b: BusinessObject) => SAMPLE_BUSINESS_OBJECTS[b].map((v) => v.code);

/**
 * The role that creates the sample publish tables, as the HR system's loader would: not the admin that provisions.
 * Local mode names it in hubExport:database.publishTableOwners (local/overrides.ts), so the task can read the tables
 * it creates after provisioning, as a deployed stack can read the loader's (components/warehouse/warehouse.ts).
 */
export const SAMPLE_LOADER_ROLE = "hub_hr_loader";

export interface SeedOptions {
  schema: string;
  /** Create the tables as this role (SET ROLE): the table owner, as the HR system's loader is. The rows are loaded by the session's own user. */
  loaderRole?: string;
  count: number;
  seed?: number;
  /** Platform regions employees are spread over (default US, EU, APAC). */
  platRegions?: string[];
  /** Countries per platform region (default DEFAULT_COUNTRIES; a region without an entry uses its own name). */
  countries?: Record<string, string[]>;
  /** Number of the first employee (E000000001 is 1): seeding again with a higher start adds employees. */
  firstEmployee?: number;
}

export interface SeedResult {
  employees: number;
  subEntities: Record<Exclude<keyof typeof PUBLISH_TABLES, "employee">, number>;
  seconds: number;
}

const FIRST_NAMES = [
  "Anna",
  "Ben",
  "Chloe",
  "David",
  "Elena",
  "Farid",
  "Grace",
  "Hiro",
  "Ines",
  "Jonas",
  "Kara",
  "Liam",
  "Mei",
  "Noah",
  "Olga",
  "Pedro",
  "Quinn",
  "Rosa",
  "Sven",
  "Tara",
  "Umar",
  "Vera",
  "Wei",
  "Xavier",
  "Yara",
  "Zoe",
];
const LAST_NAMES = [
  "Smith",
  "Müller",
  "Dubois",
  "García",
  "Rossi",
  "Tanaka",
  "Kim",
  "Nguyen",
  "Okafor",
  "Silva",
  "Novak",
  "Jensen",
  "Kowalski",
  "O'Brien",
  "Patel",
  "Singh",
  "Cohen",
  "Larsen",
  "Moreau",
  "Schmidt",
];
const JOB_FAMILIES = codes("Job Family");
const JOB_PROFILES = codes("Job Profile");
const GENDERS = codes("Gender").filter((g) => g !== PARAMETER_DEFAULTS.EmpGenderDefault);
/** ACTV for most; the other worker statuses of the CLS table for the rest. */
const INACTIVE_STATUSES = ["RETIRED", "TERM", "TERM_INV", "REG_TERM", "HIRE_RESC", "NOT_RETURN", "RETURN_UNK"];
const ADDRESS_USAGES = codes("Communication Usage Type");
const COMMUNICATION_TYPES = ["EMAIL", "MOBILE", "PHONE", "INST_MESS", "WEB_ADDR"];
const RELATIONSHIPS = codes("Related Person Relationship");
const CITIES = ["Springfield", "Riverton", "Lakeside", "Hillview", "Fairhaven", "Oakridge", "Maplewood", "Brookfield"];
const INSTITUTIONS = [
  "State University",
  "Technical Institute",
  "City College",
  "National University",
  "Business School",
];
const DEGREES = ["BSc", "BA", "MSc", "MBA", "PhD", "Diploma"];
const FIELDS = ["Computer Science", "Economics", "Law", "Marketing", "Mechanical Engineering", "Psychology"];

/** A SQL text[] literal. */
function arr(values: readonly string[]): string {
  return `ARRAY[${values.map((v) => `'${v.replace(/'/g, "''")}'`).join(",")}]::text[]`;
}
/** An element of a literal array picked by a hash expression. */
function pick(values: readonly string[], hash: string): string {
  return `(${arr(values)})[1 + (${hash}) % ${values.length}]`;
}

/** Pseudo-random non-negative bigint for employee number `g` and stream `k` (0..63), from the seed ($1). */
const h = (k: number, g = "g") => `abs(hashint8extended(${g}::bigint * 64 + ${k}, $1::bigint))`;
/** The same for the n-th sub-entity of an employee (stream k, item n). */
const hs = (k: number) => `abs(hashint8extended((g::bigint * 64 + ${k}) * 8 + n, $1::bigint))`;

/** Sample timestamps lie in 2023-2024, before any real run: a run's touch (now) is always later. */
const changedAt = (hash: string) => `(timestamp '2023-01-01' + ((${hash}) % 63072000) * interval '1 second')`;
const EMPLOYEE_ID = "('E' || lpad(g::text, 9, '0'))";

/** Employee g's country: its region (stream 4), then a country of that region (stream 5); the same for its sub-entities. */
function countryExpression(regions: string[], countries: Record<string, string[]>): string {
  const arms = regions.map((r, i) => `WHEN ${i} THEN ${pick(countriesOf(r, countries), h(5))}`).join(" ");
  return `(CASE ${h(4)} % ${regions.length} ${arms} END)`;
}

/**
 * A region's countries: the given ones; else the region's name where it is a sample country code (CA, MX); else every
 * sample country. A region name such as UK or AP is no country code, and the CLS check would report it unknown.
 */
export function countriesOf(region: string, countries: Record<string, string[]> = DEFAULT_COUNTRIES): string[] {
  if (countries[region]) return countries[region];
  const known = codes("Country");
  return known.includes(region) ? [region] : known;
}

/** A client, or a pool: with a pool, the tables load in two sessions at once (the machines here have two cores). */
export type SeedDatabase = ClientBase | Pool;

/** Creates the publish schema's tables (if absent) and loads `count` employees with their sub-entities. */
export async function seedSampleEmployees(db: SeedDatabase, options: SeedOptions): Promise<SeedResult> {
  const started = Date.now();
  const s = sqlIdentifier(options.schema, "publish schema");
  const first = options.firstEmployee ?? 1;
  const params = [options.seed ?? 1, first, first + options.count - 1];
  const regions = options.platRegions ?? ["US", "EU", "APAC"];
  const country = countryExpression(regions, options.countries ?? DEFAULT_COUNTRIES);
  const regionRows = regions.map((r, i) => `(${i}, '${r.replace(/'/g, "''")}')`).join(", ");
  const range = "generate_series($2::bigint, $3::bigint) AS g";
  const ddl = publishSchemaSql(s);

  const employees = `INSERT INTO ${s}.${PUBLISH_TABLES.employee}
    SELECT ${EMPLOYEE_ID}, fn, ln, CASE WHEN ${h(3)} % 10 = 0 THEN left(fn, 3) END,
           lower(fn || '.' || replace(ln, '''', '') || g || '@example.com'),
           ${country}, rg.plat_region,
           CASE WHEN ${h(6)} % 20 <> 0 THEN ${pick(JOB_FAMILIES, h(7))} END,
           CASE WHEN ${h(8)} % 20 <> 0 THEN ${pick(GENDERS, h(9))} END,
           ws, ${pick(JOB_PROFILES, h(10))}, hire,
           CASE WHEN ws <> 'ACTV' THEN hire + (${h(11)} % 3000)::int END,
           ws = 'ACTV', ${changedAt(h(12))}
      FROM ${range}
      CROSS JOIN LATERAL (SELECT ${pick(FIRST_NAMES, h(1))} AS fn, ${pick(LAST_NAMES, h(2))} AS ln,
                                 CASE WHEN ${h(13)} % 10 < 8 THEN 'ACTV' ELSE ${pick(INACTIVE_STATUSES, h(14))} END AS ws,
                                 date '2000-01-01' + (${h(15)} % 9000)::int AS hire) v
      JOIN (VALUES ${regionRows}) AS rg(idx, plat_region) ON rg.idx = ${h(4)} % ${regions.length}`;

  // Sub-entities: the n-th item (at most 3) of employee g; how many varies per employee. Country follows the employee's.
  type Sub = keyof SeedResult["subEntities"];
  const sub = (table: Sub, items: string, columns: string): [Sub, string] => [
    table,
    `INSERT INTO ${s}.${PUBLISH_TABLES[table]} SELECT ${columns} FROM ${range} CROSS JOIN (VALUES (1), (2), (3)) AS k(n) WHERE n <= ${items}`,
  ];
  const subs = [
    sub(
      "address",
      `1 + ${h(20)} % 2`,
      `${EMPLOYEE_ID} || '-A' || n, ${EMPLOYEE_ID}, (${arr(ADDRESS_USAGES)})[n], (1 + ${hs(21)} % 999) || ' ' || ${pick(CITIES, hs(22))} || ' Street',
       CASE WHEN ${hs(23)} % 4 = 0 THEN 'Apt ' || (1 + ${hs(24)} % 50) END, ${pick(CITIES, hs(25))}, NULL, lpad((${hs(26)} % 99999)::text, 5, '0'),
       ${country}, n = 1 OR ${hs(27)} % 3 <> 0, ${changedAt(hs(28))}`,
    ),
    sub(
      "communication",
      `1 + ${h(30)} % 3`,
      `${EMPLOYEE_ID} || '-C' || n, ${EMPLOYEE_ID}, (${arr(COMMUNICATION_TYPES)})[1 + (${h(31)} + n) % ${COMMUNICATION_TYPES.length}],
       'c' || g || '-' || n || '@example.com', n = 1, ${hs(32)} % 10 <> 0, ${changedAt(hs(33))}`,
    ),
    sub(
      "education",
      `${h(40)} % 3`,
      `${EMPLOYEE_ID} || '-E' || n, ${EMPLOYEE_ID}, ${pick(INSTITUTIONS, hs(41))}, ${pick(DEGREES, hs(42))}, ${pick(FIELDS, hs(43))},
       ${country}, date '1990-06-30' + (${hs(44)} % 10000)::int, true, ${changedAt(hs(45))}`,
    ),
    sub(
      "dependent",
      `(${h(50)} % 3) * (${h(51)} % 2)`,
      `${EMPLOYEE_ID} || '-D' || n, ${EMPLOYEE_ID}, ${pick(FIRST_NAMES, hs(52))}, ${pick(LAST_NAMES, hs(53))},
       CASE WHEN ${hs(54)} % 10 <> 0 THEN ${pick(GENDERS, hs(55))} END, ${pick(RELATIONSHIPS.slice(0, 4), hs(56))},
       date '1960-01-01' + (${hs(57)} % 20000)::int, ${country}, ${hs(58)} % 12 <> 0, ${changedAt(hs(59))}`,
    ),
    sub(
      "contact",
      `(${h(60)} % 5 <> 0)::int`,
      `${EMPLOYEE_ID} || '-K' || n, ${EMPLOYEE_ID}, ${pick(FIRST_NAMES, hs(61))}, ${pick(LAST_NAMES, hs(62))}, ${pick(RELATIONSHIPS, hs(63))},
       '+1-555-' || lpad((${hs(0)} % 10000)::text, 4, '0'), NULL, ${country}, true, ${changedAt(hs(1))}`,
    ),
  ];
  // Comments go first: the first statement follows the @indexes comment (dropping it lost employee_pkey, and every
  // extract chunk then scanned the whole employee table).
  const indexes = ddl.indexes
    .replace(/^--.*$/gm, "")
    .split(/;\s*\n/)
    .map((x) => x.trim())
    .filter((x) => x.startsWith("CREATE"));

  const counts = {} as SeedResult["subEntities"];
  await withSessions(db, async (sessions) => {
    await sessions[0].query(ddl.schema);
    // CREATE TABLE IF NOT EXISTS: tables an earlier seed created keep their owner.
    if (options.loaderRole) await sessions[0].query(`SET ROLE ${sqlIdentifier(options.loaderRole, "loader role")}`);
    try {
      await sessions[0].query(ddl.tables);
    } finally {
      if (options.loaderRole) await sessions[0].query("RESET ROLE");
    }
    await sessions[0].query(employees, params);
    // Each statement commits on its own: sample data needs no atomicity, and the sessions share the work.
    const shared = <T>(queue: T[], work: (c: ClientBase, item: T) => Promise<unknown>) =>
      Promise.all(
        sessions.map(async (c) => {
          for (let next = queue.shift(); next; next = queue.shift()) await work(c, next);
        }),
      );
    await shared(subs, async (c, [table, sql]) => (counts[table] = (await c.query(sql, params)).rowCount ?? 0));
    await shared(indexes, (c, sql) => c.query(sql));
    await sessions[0].query(
      `ANALYZE ${Object.values(PUBLISH_TABLES)
        .map((t) => `${s}.${t}`)
        .join(", ")}`,
    );
  });
  return { employees: options.count, subEntities: counts, seconds: (Date.now() - started) / 1000 };
}

/** Runs `work` in one session for a client, two for a pool; the sessions do not wait for WAL flushes. */
async function withSessions(db: SeedDatabase, work: (sessions: ClientBase[]) => Promise<void>): Promise<void> {
  const pool = typeof (db as Pool).totalCount === "number" ? (db as Pool) : undefined;
  const leased: PoolClient[] = pool ? await Promise.all([pool.connect(), pool.connect()]) : [];
  const sessions: ClientBase[] = pool ? leased : [db as ClientBase];
  try {
    for (const c of sessions) await c.query("SET synchronous_commit = off; SET maintenance_work_mem = '256MB'");
    await work(sessions);
  } finally {
    for (const c of sessions) await c.query("RESET synchronous_commit; RESET maintenance_work_mem").catch(() => {});
    for (const c of leased) c.release();
  }
}

export interface TouchOptions {
  schema: string;
  count: number;
  seed?: number;
  /** The new changed_at; default the database's current local time. */
  at?: Date;
  /**
   * Give the changed job profiles codes the sample CLS sheet lacks (`SALES_REP_X`), to show the unknown-code check;
   * by default each gets the next job profile of the sheet.
   */
  unknownCodes?: boolean;
}

/**
 * Changes `count` employees picked by the seed: half in the employee row itself (job profile), half only in a
 * sub-entity (an address), so an incremental run must notice both; with `unknownCodes`, every one in its job profile
 * (whatever the seed draws, the run has unknown codes to report). Returns the changed employee ids, sorted. Any
 * employee id is picked alike (hashed as text: a warehouse may hold ids of any shape, '' included).
 */
export async function touchEmployees(client: ClientBase | Pool, options: TouchOptions): Promise<string[]> {
  const s = sqlIdentifier(options.schema, "publish schema");
  const at = options.at ? "$3::timestamp" : "localtimestamp";
  const params: unknown[] = [options.seed ?? 1, options.count];
  if (options.at) params.push(options.at.toISOString().replace("Z", ""));
  // The next profile of the sheet (one not in it becomes the first): every changed employee keeps a known code.
  const profiles = arr(JOB_PROFILES);
  const jobProfile = options.unknownCodes
    ? "coalesce(e.job_profile, '') || '_X'"
    : `(${profiles})[1 + coalesce(array_position(${profiles}, e.job_profile), 0) % ${JOB_PROFILES.length}]`;
  const inRow = options.unknownCodes ? "true" : "p.h % 2 = 0";
  const { rows } = await client.query<{ employee_id: string }>(
    `WITH picked AS (
       SELECT employee_id, hashtextextended(employee_id, $1::bigint) AS h
         FROM ${s}.${PUBLISH_TABLES.employee} ORDER BY 2, 1 LIMIT $2
     ), emp AS (
       UPDATE ${s}.${PUBLISH_TABLES.employee} e SET job_profile = ${jobProfile}, changed_at = ${at}
         FROM picked p WHERE p.employee_id = e.employee_id AND ${inRow} RETURNING e.employee_id
     ), addr AS (
       UPDATE ${s}.${PUBLISH_TABLES.address} a SET line2 = 'Suite ' || (abs(p.h) % 100), changed_at = ${at}
         FROM picked p WHERE a.address_id = p.employee_id || '-A1' AND NOT (${inRow}) RETURNING a.employee_id
     )
     SELECT employee_id FROM emp UNION SELECT employee_id FROM addr ORDER BY 1`,
    params,
  );
  return rows.map((r) => r.employee_id);
}
