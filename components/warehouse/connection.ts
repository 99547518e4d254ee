/** The warehouse admin connection as Pulumi inputs: the password is a Pulumi secret, the rest is plain. */
import type * as pulumi from "@pulumi/pulumi";
import type { PgConnection } from "../../providers/pg";

export type PgConnectionInput = { [K in keyof PgConnection]: pulumi.Input<PgConnection[K]> };
