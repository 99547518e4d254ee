import { defineCommand } from "../command";
import { encodeCredentialsString } from "../../core/credentials";
import { UsageError } from "../../core/errors";

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks).toString("utf8");
}

export default defineCommand({
  summary: "Print a tenant's credentials string for tenant_credentials.txt",
  usage: "hub-export credentials-string --client-id ID --client-secret SECRET|-   (- reads the secret from stdin)",
  options: { "client-id": { type: "string" }, "client-secret": { type: "string" } },
  async run(values, io) {
    const clientId = values["client-id"];
    let clientSecret = values["client-secret"];
    if (!clientId) throw new UsageError("--client-id is required");
    if (clientSecret === undefined) throw new UsageError("--client-secret is required (use - to read it from stdin)");
    // A secret piped in usually ends with one newline that is not part of it.
    if (clientSecret === "-") clientSecret = (await readAll(io.stdin)).replace(/\r?\n$/, "");
    if (!clientSecret) throw new UsageError("--client-secret is empty");
    io.stdout.write(encodeCredentialsString({ clientId, clientSecret }) + "\n");
    return 0;
  },
});
