/**
 * The platform's connection-strings entity collection (procedure step 2; README, "Where each step of the procedure is carried out"): one Secrets Manager
 * secret per connection record at `<prefix>/connection-strings/<System Name>`, holding the whole record
 * (serializeConnectionRecord) as its secret string, encrypted with the stack's KMS key. The export task resolves
 * every connection by name from here.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { connectionSecretName } from "../../core/naming";

export interface ConnectionRecordArgs {
  /** System Name: the name in tags, hub_destination and credentials.ini. */
  systemName: string;
  /** MessageQueue, PostgreSQL or S3. */
  type: string;
  description: string;
  /** The stored record; always a Pulumi secret, since it holds the password. */
  secretString: pulumi.Output<string>;
}

export interface ConnectionStoreArgs {
  /** `hubExport:connectionStore.prefix` */
  prefix: string;
  kmsKeyArn: pulumi.Input<string>;
  records: ConnectionRecordArgs[];
}

/**
 * Deleted records are not kept for recovery: each is derived entirely from the stack config, so nothing is lost, and
 * a recovery window would make re-adding a region (the same secret name) fail until it ends.
 */
export const RECOVERY_WINDOW_DAYS = 0;

export interface StoredConnection {
  systemName: string;
  type: string;
  /** The secret's name: `<prefix>/connection-strings/<System Name>`. */
  secretName: string;
  secretArn: pulumi.Output<string>;
}

export class ConnectionStore extends pulumi.ComponentResource {
  readonly connections: StoredConnection[];

  constructor(name: string, args: ConnectionStoreArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:connections:ConnectionStore", name, {}, opts);
    this.connections = args.records.map((record) => {
      const secretName = connectionSecretName(args.prefix, record.systemName);
      const secret = new aws.secretsmanager.Secret(
        `${name}/${record.systemName}`,
        {
          name: secretName,
          description: `${record.type} connection ${record.systemName}: ${record.description}`,
          kmsKeyId: args.kmsKeyArn,
          recoveryWindowInDays: RECOVERY_WINDOW_DAYS,
        },
        { parent: this },
      );
      new aws.secretsmanager.SecretVersion(
        `${name}/${record.systemName}`,
        { secretId: secret.id, secretString: record.secretString },
        { parent: this },
      );
      return { systemName: record.systemName, type: record.type, secretName, secretArn: secret.arn };
    });
    this.registerOutputs({
      connections: this.connections.map((c) => ({
        systemName: c.systemName,
        secretName: c.secretName,
        secretArn: c.secretArn,
      })),
    });
  }
}
