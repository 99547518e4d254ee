/** The objects of the bucket (procedure steps 1 and 7): folder markers, the rendered template, the scripts folder. */
import type { StackConfig } from "../config/schema";
import { BUCKET_FOLDERS, SCRIPT_FILES } from "./naming";
import { credentialsIni, tenantCredentialsTxt, CREDENTIALS_INI_TEMPLATE, TENANT_CREDENTIALS_TEMPLATE } from "./credentialFiles";
import type { RenderedTemplate } from "./template";

export interface BucketObject {
  key: string;
  content: string;
  contentType: string;
  /** Content holds secrets: stored SSE-KMS and kept secret in state and outputs. */
  secret: boolean;
  /** Encrypt with the stack's KMS key (the credential files) rather than the bucket default. */
  kms: boolean;
  /** A folder marker (zero-byte key ending in /). */
  folder: boolean;
}

export function bucketObjects(config: StackConfig, template: RenderedTemplate): BucketObject[] {
  const folder = (key: string): BucketObject => ({ key, content: "", contentType: "application/x-directory", secret: false, kms: false, folder: true });
  const file = (key: string, content: string, contentType: string, secret = false, kms = false): BucketObject => ({ key, content, contentType, secret, kms, folder: false });
  const scripts = BUCKET_FOLDERS.scripts;
  return [
    folder(BUCKET_FOLDERS.templates),
    folder(scripts),
    file(BUCKET_FOLDERS.templates + template.fileName, template.text, "application/json"),
    file(scripts + SCRIPT_FILES.credentialsIniTemplate, CREDENTIALS_INI_TEMPLATE, "text/plain"),
    file(scripts + SCRIPT_FILES.tenantCredentialsTemplate, TENANT_CREDENTIALS_TEMPLATE, "text/plain"),
    file(scripts + SCRIPT_FILES.credentialsIni, credentialsIni(config), "text/plain", false, true),
    file(scripts + SCRIPT_FILES.tenantCredentials, tenantCredentialsTxt(config), "application/json", true, true),
  ];
}
