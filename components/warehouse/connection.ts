/**
 * How `pulumi up` reaches the warehouse: the provisioning endpoint, the admin login (its password a Pulumi secret) and
 * TLS. The PostgreSQL provider is configured with it; the SQL resources (rows, baseline) only carry the database's
 * label and get the same login from their provider's configuration (providers/pg.ts provisioningLogin).
 */
import path from "node:path";
import type * as pulumi from "@pulumi/pulumi";
import type { StackConfig } from "../../config/schema";
import { databaseLabel, type SslMode } from "../../providers/pg";

export interface WarehouseLogin {
  host: string;
  port: number;
  database: string;
  user: string;
  password: pulumi.Output<string>;
  /** libpq sslmode for the PostgreSQL provider. */
  sslMode: SslMode | "verify-ca";
  /**
   * The CA bundle for verify-full, relative to the project folder: Pulumi starts the PostgreSQL provider there. Never
   * absolute: a provider input that names the checkout's folder would show as a change in every preview from another
   * machine (a CI runner after a laptop's `up`).
   */
  sslRootCert?: string;
  /** `host:port/database` of the task endpoint: the label the SQL resources keep. */
  label: string;
}

export function warehouseLogin(db: StackConfig["database"], password: pulumi.Output<string>): WarehouseLogin {
  const host = db.provisioning?.host ?? db.host;
  const port = db.provisioning?.port ?? db.port;
  // Through a tunnel the server's certificate does not name the tunnel's host: the PostgreSQL provider (libpq)
  // verifies the chain only; the SQL resources verify the name too, against the task endpoint (providers/pg.ts).
  const tunnel = host !== db.host;
  return {
    host,
    port,
    database: db.database,
    user: db.admin.username,
    password,
    sslMode: db.sslMode === "verify-full" && tunnel ? "verify-ca" : db.sslMode,
    ...(db.caBundle ? { sslRootCert: path.posix.normalize(db.caBundle) } : {}),
    label: databaseLabel(db),
  };
}
