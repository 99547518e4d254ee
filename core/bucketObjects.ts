/**
 * The objects of the bucket (procedure steps 1 and 7): folder markers, the pipeline template (byte for byte: the
 * download source of step 1), this job's rendered pipeline, the scripts templates; the shared credential files are
 * merged into, not written (core/credentialFiles.ts). `shared` objects are the same for every hub pipeline of the
 * platform environment, so removing a stack leaves them.
 */
import type { StackConfig } from "./stackConfig";
import { BUCKET_FOLDERS, SCRIPT_FILES, renderedPipelineKey } from "./naming";
import { CREDENTIALS_INI_TEMPLATE, TENANT_CREDENTIALS_TEMPLATE } from "./credentialFiles";
import type { PipelineTemplate, RenderedTemplate } from "./template";

export interface BucketObject {
  key: string;
  content: string;
  contentType: string;
  /** A folder marker (zero-byte key ending in /). */
  folder: boolean;
  /** Shared by the platform environment's pipelines: kept when the stack is removed. */
  shared: boolean;
}

export function bucketObjects(
  config: StackConfig,
  template: PipelineTemplate,
  rendered: RenderedTemplate,
): BucketObject[] {
  const base = { folder: false, shared: false };
  const folder = (key: string): BucketObject => ({
    ...base,
    key,
    content: "",
    contentType: "application/x-directory",
    folder: true,
    shared: true,
  });
  const shared = (key: string, content: string, contentType: string): BucketObject => ({
    ...base,
    key,
    content,
    contentType,
    shared: true,
  });
  const scripts = BUCKET_FOLDERS.scripts;
  return [
    folder(BUCKET_FOLDERS.templates),
    folder(BUCKET_FOLDERS.pipelines),
    folder(scripts),
    shared(BUCKET_FOLDERS.templates + template.fileName, template.text, "application/json"),
    { ...base, key: renderedPipelineKey(config.jobName), content: rendered.text, contentType: "application/json" },
    shared(scripts + SCRIPT_FILES.credentialsIniTemplate, CREDENTIALS_INI_TEMPLATE, "text/plain"),
    shared(scripts + SCRIPT_FILES.tenantCredentialsTemplate, TENANT_CREDENTIALS_TEMPLATE, "text/plain"),
  ];
}
