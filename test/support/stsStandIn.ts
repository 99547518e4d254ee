/**
 * A loopback stand-in for the two STS actions the providers' AWS access calls (providers/awsAccess.ts):
 * GetCallerIdentity and AssumeRole, spoken as STS speaks them (the query protocol: a form-encoded POST, XML answers).
 * The caller is told by the access key id its request is signed with (signatures are not checked); each key belongs to
 * an account. AssumeRole hands out a new key of the role's account. The real SDK client reaches it through
 * AWS_ENDPOINT_URL_STS.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";

export interface StsCall {
  action: string;
  /** The access key id the request was signed with. */
  accessKeyId: string;
  roleArn?: string;
}

export interface StsStandIn {
  url: string;
  calls: StsCall[];
  /** Access key id → account, the issued ones included. */
  accounts: Map<string, string>;
  close(): Promise<void>;
}

const NS = "https://sts.amazonaws.com/doc/2011-06-15/";

export async function startStsStandIn(accounts: Record<string, string>): Promise<StsStandIn> {
  const known = new Map(Object.entries(accounts));
  const calls: StsCall[] = [];
  const answer = (res: http.ServerResponse, status: number, xml: string) => {
    res.writeHead(status, { "content-type": "text/xml" });
    res.end(`<?xml version="1.0" encoding="UTF-8"?>${xml}`);
  };
  const fault = (res: http.ServerResponse, status: number, code: string, message: string) =>
    answer(
      res,
      status,
      `<ErrorResponse xmlns="${NS}"><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>stand-in</RequestId></ErrorResponse>`,
    );

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const form = new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
      const accessKeyId = /Credential=([^/,\s]+)\//.exec(req.headers.authorization ?? "")?.[1] ?? "";
      const action = form.get("Action") ?? "";
      const call: StsCall = { action, accessKeyId, ...(form.get("RoleArn") ? { roleArn: form.get("RoleArn")! } : {}) };
      calls.push(call);
      const account = known.get(accessKeyId);
      if (!account)
        return fault(res, 403, "InvalidClientTokenId", "The security token included in the request is invalid.");
      if (action === "GetCallerIdentity") {
        return answer(
          res,
          200,
          `<GetCallerIdentityResponse xmlns="${NS}"><GetCallerIdentityResult><Arn>arn:aws:iam::${account}:user/${accessKeyId}</Arn><UserId>${accessKeyId}</UserId><Account>${account}</Account></GetCallerIdentityResult><ResponseMetadata><RequestId>stand-in</RequestId></ResponseMetadata></GetCallerIdentityResponse>`,
        );
      }
      if (action === "AssumeRole") {
        const roleArn = call.roleArn ?? "";
        const roleAccount = /^arn:aws:iam::(\d{12}):role\//.exec(roleArn)?.[1];
        if (!roleAccount) return fault(res, 400, "ValidationError", `not a role: ${roleArn}`);
        const issued = `ASIA${crypto.createHash("sha256").update(`${accessKeyId} ${roleArn}`).digest("hex").slice(0, 16).toUpperCase()}`;
        known.set(issued, roleAccount);
        const expiration = new Date(Date.now() + 3600_000).toISOString();
        return answer(
          res,
          200,
          `<AssumeRoleResponse xmlns="${NS}"><AssumeRoleResult><Credentials><AccessKeyId>${issued}</AccessKeyId><SecretAccessKey>secret-${issued}</SecretAccessKey><SessionToken>token-${issued}</SessionToken><Expiration>${expiration}</Expiration></Credentials><AssumedRoleUser><Arn>${roleArn}/${form.get("RoleSessionName") ?? ""}</Arn><AssumedRoleId>AROA:${issued}</AssumedRoleId></AssumedRoleUser></AssumeRoleResult><ResponseMetadata><RequestId>stand-in</RequestId></ResponseMetadata></AssumeRoleResponse>`,
        );
      }
      fault(res, 400, "InvalidAction", `${action} is not supported by the stand-in`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    accounts: known,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The AWS CLI's files with these profiles (name → access key id), in `dir`, and the SDK's variables that point at
 * them: no key in the environment, so a client's credentials come from a profile.
 */
export function awsProfilesEnv(dir: string, profiles: Record<string, string>): Record<string, string | undefined> {
  const credentials = path.join(dir, "credentials");
  const config = path.join(dir, "config");
  fs.writeFileSync(
    credentials,
    Object.entries(profiles)
      .map(([name, key]) => `[${name}]\naws_access_key_id = ${key}\naws_secret_access_key = secret-${key}\n`)
      .join("\n"),
  );
  fs.writeFileSync(
    config,
    Object.keys(profiles)
      .map((name) => `[${name === "default" ? "default" : `profile ${name}`}]\nregion = us-east-1\n`)
      .join("\n"),
  );
  return {
    AWS_SHARED_CREDENTIALS_FILE: credentials,
    AWS_CONFIG_FILE: config,
    AWS_ACCESS_KEY_ID: undefined,
    AWS_SECRET_ACCESS_KEY: undefined,
    AWS_SESSION_TOKEN: undefined,
    AWS_PROFILE: undefined,
  };
}
