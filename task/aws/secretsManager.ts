/** The Secrets Manager adapter: reads one secret string. Loaded only for a `secretsmanager:PREFIX` connection store. */
import { UserError } from "../../core/errors";

export interface SecretReader {
  /** The secret string, or undefined when no secret has that name. */
  read(name: string): Promise<string | undefined>;
  close(): void;
}

export function secretsManagerReader(): SecretReader {
  const sdk = require("@aws-sdk/client-secrets-manager") as typeof import("@aws-sdk/client-secrets-manager");
  const client = new sdk.SecretsManagerClient({});
  return {
    async read(name) {
      try {
        const out = await client.send(new sdk.GetSecretValueCommand({ SecretId: name }));
        return out.SecretString;
      } catch (err) {
        const code = (err as { name?: string }).name;
        if (code === "ResourceNotFoundException") return undefined;
        // The message names the secret, never its value.
        throw new UserError(`cannot read secret ${name}: ${code ?? "error"}: ${(err as Error).message}`);
      }
    },
    close: () => client.destroy(),
  };
}
