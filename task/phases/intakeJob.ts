/** The HRSYS intake job reports (docs/hub-contract.md): STARTED when a run starts, COMPLETED or FAILED once finished. */
import type { RunContext } from "../context";
import { postToHub } from "../hub/api";
import { distinctHubTenants } from "../load/configuration";
import type { FinalCounts, IntakeJobStatus } from "../warehouse/runState";

export async function reportIntakeJob(ctx: RunContext, status: "STARTED" | "COMPLETED" | "FAILED", counts?: FinalCounts): Promise<void> {
  const p = ctx.config.definition.parameters;
  const hubTenants = distinctHubTenants(ctx.config.tenants);
  await Promise.all(
    hubTenants.map((tenant) => {
      const c = counts?.tenants[tenant.hubTenantId];
      const body = {
        jobName: p.job_name,
        transactionId: ctx.run.transactionId,
        systemCode: p.system_code,
        dataDomainCode: ctx.config.definition.dataDomainCode,
        status,
        counts: c ? { published: c.published, failed: c.failed, entities: c.entities } : {},
      };
      return postToHub(ctx.dispatcher, { api: "HRSYS", apiUrl: tenant.apis.HRSYS, tenantId: tenant.hubTenantId, credentialsString: tenant.credentialsString, body: JSON.stringify(body) }, ctx.settings.retry);
    }),
  );
  ctx.log.info({ event: "intakeJob.reported", status, tenants: hubTenants.length }, `HRSYS intake job ${status}`);
}

export function hrsysStatus(status: IntakeJobStatus): "COMPLETED" | "FAILED" {
  return status === "ExecutionCompleted" ? "COMPLETED" : "FAILED";
}
