/** A fresh database per test file on the run's one embedded server. */
import { inject } from "vitest";
import { Client } from "pg";
import crypto from "node:crypto";

export async function createTestDatabase(prefix = "t"): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const adminUrl = inject("pgAdminUrl");
  const name = `${prefix}_${crypto.randomBytes(5).toString("hex")}`.toLowerCase();
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = "/" + name;
  return {
    url: url.toString(),
    name,
    async drop() {
      const c = new Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}
