import { text } from "node:stream/consumers";
import { defineCommand } from "../command";
import { encodeCredentialsString } from "../../core/credentials";
import { UsageError } from "../../core/errors";

export default defineCommand({
  summary: "Print a tenant's credentials string for tenant_credentials.txt",
  options: {
    "client-id": {
      type: "string",
      value: "ID",
      required: true,
      description: "The tenant's hub client id",
      example: "--client-id acme-us",
    },
    "client-secret": {
      type: "string",
      value: "SECRET|-",
      required: true,
      description: "The tenant's hub client secret; - reads it from stdin (keeps it out of the shell history)",
      example: "--client-secret -",
    },
  },
  examples: [
    {
      command: 'printf %s "$SECRET" | hub-export credentials-string --client-id acme-us --client-secret -',
      does: "prints the string for tenant_credentials.txt",
    },
  ],
  async run(values, io) {
    const clientId = values["client-id"];
    let clientSecret = values["client-secret"];
    if (!clientId) throw new UsageError("--client-id is required");
    if (clientSecret === undefined) throw new UsageError("--client-secret is required (use - to read it from stdin)");
    // A secret piped in usually ends with one newline that is not part of it.
    if (clientSecret === "-") clientSecret = (await text(io.stdin)).replace(/\r?\n$/, "");
    if (!clientSecret) throw new UsageError("--client-secret is empty");
    io.stdout.write(encodeCredentialsString({ clientId, clientSecret }) + "\n");
    return 0;
  },
});
