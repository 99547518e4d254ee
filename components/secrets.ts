/**
 * The bridge from validated config to Pulumi: a core Secret (prints [secret], revealed only on purpose) becomes a
 * Pulumi secret Output, so that it stays encrypted in state, masked in previews and secret in outputs. Component
 * Args only ever carry these Outputs, never the revealed text.
 */
import * as pulumi from "@pulumi/pulumi";
import type { Secret } from "../core/secret";

export function pulumiSecret(secret: Secret, what: string): pulumi.Output<string> {
  return pulumi.secret(secret.reveal(what));
}
