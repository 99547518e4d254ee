/**
 * The hub's ERS and HRSYS APIs (docs/hub-contract.md): `POST {api url}{path}` (the hub contract's path template, by
 * default `{name}?tenantId=<uuid>`) with `Authorization: Basic <credentials string>`. 429, 5xx and network errors
 * retry with backoff; any other answer but 2xx is a HubApiError.
 */
import type { Dispatcher } from "undici";
import { basicAuthorization, hubCallUrl, isTransientStatus, type HubApiName } from "../../core/hubContract";
import { answerText, backoffMs, describeNetworkError, sendThrough, wait, type RetryPolicy } from "../http/retry";
import { UNLIMITED, type RequestGate } from "../http/concurrency";
import { target } from "../queue/broker";

export class HubApiError extends Error {
  constructor(
    /** The hub API, or QUEUE for a refused message when the contract says stop. */
    readonly api: HubApiName | "QUEUE",
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = "HubApiError";
  }
}

export interface HubCall {
  api: HubApiName;
  apiUrl: string;
  /** The hub contract's path template for the call (relative to apiUrl, `{tenantId}` filled in). */
  path: string;
  tenantId: string;
  /** Secret: goes into the Authorization header only. */
  credentialsString: string;
  /** JSON; a Buffer is sent as it is (every attempt the same bytes). */
  body: string | Buffer;
}

/** `gate`: every attempt passes it (for ERS, the adaptive concurrency of the API in the tenant's region). */
export async function postToHub(dispatcher: Dispatcher, call: HubCall, retry: RetryPolicy, gate: RequestGate = UNLIMITED): Promise<void> {
  const url = hubCallUrl(call.apiUrl, call.path, call.tenantId);
  let last = "";
  for (let attempt = 1; attempt <= retry.attempts; attempt++) {
    let status: number;
    let text: string;
    let retryAfter: string | string[] | undefined;
    try {
      ({ status, text, retryAfter } = await sendThrough(gate, dispatcher, { ...target(url), method: "POST", headers: { authorization: basicAuthorization(call.credentialsString), "content-type": "application/json" }, body: call.body }));
    } catch (err) {
      last = describeNetworkError(err);
      await wait(backoffMs(attempt, retry));
      continue;
    }
    if (status >= 200 && status < 300) return;
    last = `HTTP ${status}: ${answerText(text)}`;
    if (!isTransientStatus(status)) throw new HubApiError(call.api, `${call.api} API refused the request for tenant ${call.tenantId}: ${last}`, status);
    await wait(backoffMs(attempt, retry, retryAfter));
  }
  throw new HubApiError(call.api, `${call.api} API: gave up for tenant ${call.tenantId} after ${retry.attempts} attempts: ${last}`);
}
