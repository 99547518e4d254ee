/**
 * The HRSYS intake job reports (an assumed call, docs/hub-contract.md): STARTED when a run starts, COMPLETED or FAILED
 * once finished. The hub contract (hubContract.intakeReport) may turn them off, or make them best-effort: a failure is
 * then recorded in the log and the run goes on, so a hub without the endpoint never keeps a run from exporting.
 */
import type { RunContext } from "../context";
import { postToHub } from "../hub/api";
import { UNLIMITED } from "../http/concurrency";
import { RunStopped } from "../stop";
import { LinkOpen } from "../http/breaker";
import { distinctHubTenants } from "../load/configuration";
import type { FinalCounts, IntakeJobStatus } from "../warehouse/runState";

export type IntakeReport = "STARTED" | "COMPLETED" | "FAILED";

/** Reports to every tenant's HRSYS API (unless turned off); a failure throws under `stop`, and is logged under `record`. */
export async function reportIntakeJob(ctx: RunContext, status: IntakeReport, counts?: FinalCounts): Promise<void> {
  const contract = ctx.config.definition.hubContract.intakeReport;
  if (!contract.enabled) {
    ctx.log.debug(
      { event: "intakeJob.skipped", status },
      "HRSYS intake report turned off (hubContract.intakeReport.enabled: false)",
    );
    return;
  }
  const p = ctx.config.definition.parameters;
  const hubTenants = distinctHubTenants(ctx.config.tenants);
  const results = await Promise.allSettled(
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
      return postToHub(
        ctx.http,
        {
          api: "HRSYS",
          apiUrl: tenant.apis.HRSYS,
          path: contract.path,
          tenantId: tenant.hubTenantId,
          credentialsString: tenant.credentialsString,
          body: JSON.stringify(body),
        },
        UNLIMITED,
        ctx.links.breaker("hrsys", tenant.region),
      );
    }),
  );
  const why = (err: unknown) => (err instanceof LinkOpen ? err.reason : ((err as Error)?.message ?? String(err)));
  const failures = results.flatMap((r, i) =>
    r.status === "rejected" ? [{ tenantId: hubTenants[i].hubTenantId, reason: why(r.reason) }] : [],
  );
  if (failures.length === 0) {
    ctx.log.info({ event: "intakeJob.reported", status, tenants: hubTenants.length }, `HRSYS intake job ${status}`);
    return;
  }
  // A stopping run stops here whatever the contract says: the next run reports. (An open HRSYS link is a failure of
  // the report like any other: the contract decides.)
  const stopped = results.find(
    (r) => r.status === "rejected" && r.reason instanceof RunStopped && !(r.reason instanceof LinkOpen),
  ) as PromiseRejectedResult | undefined;
  if (stopped) throw stopped.reason;
  if (contract.onFailure === "stop")
    throw (results.find((r) => r.status === "rejected") as PromiseRejectedResult).reason;
  for (const f of failures) {
    ctx.log.warn(
      { event: "hub.call.failed", api: "HRSYS", onFailure: "record", status, ...f },
      "HRSYS intake report failed; recorded, the run goes on (hubContract.intakeReport.onFailure: record)",
    );
  }
}

export function hrsysStatus(status: IntakeJobStatus): "COMPLETED" | "FAILED" {
  return status === "ExecutionCompleted" ? "COMPLETED" : "FAILED";
}
