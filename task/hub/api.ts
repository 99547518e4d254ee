/**
 * The hub's ERS and HRSYS APIs (docs/hub-contract.md): `POST {api url}{path}` with `Authorization: Basic <credentials
 * string>`. 429, 5xx and network errors retry within the request's budget (task/http/client.ts); any other answer but
 * 2xx, and an answer too long, is a HubApiError.
 */
import { basicAuthorization, hubCallUrl, isTransientStatus, type HubApiName } from "../../core/hubContract";
import { answerText, describeRequestError } from "../http/retry";
import { Attempts, isPermanentRequestError, type Answer, type HubHttp } from "../http/client";
import { RunStopped } from "../stop";
import { UNLIMITED, type RequestGate } from "../http/concurrency";
import type { BreakerGate } from "../http/breaker";
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

/**
 * `gate`: every attempt passes it (for ERS, the adaptive concurrency of the API in the tenant's region), and `breaker`
 * (the API's in the tenant's region). The attempts share the client's retry budget; an answer too long is permanent; a
 * stopping run throws RunStopped, an open link LinkOpen.
 */
export async function postToHub(
  http: HubHttp,
  call: HubCall,
  gate: RequestGate = UNLIMITED,
  breaker?: BreakerGate,
): Promise<void> {
  const url = hubCallUrl(call.apiUrl, call.path, call.tenantId);
  const attempts = new Attempts(http, breaker);
  let last = "";
  while (attempts.next()) {
    let answer: Answer;
    try {
      answer = await http.send(
        {
          ...target(url),
          method: "POST",
          headers: { authorization: basicAuthorization(call.credentialsString), "content-type": "application/json" },
          body: call.body,
        },
        gate,
        breaker,
      );
    } catch (err) {
      if (err instanceof RunStopped) throw err;
      last = describeRequestError(err);
      if (isPermanentRequestError(err))
        throw new HubApiError(
          call.api,
          `${call.api} API: the request for tenant ${call.tenantId} failed for good: ${last}`,
        );
      await attempts.backoff();
      continue;
    }
    const { status, text, retryAfter } = answer;
    if (status >= 200 && status < 300) return;
    last = `HTTP ${status}: ${answerText(text)}`;
    if (!isTransientStatus(status))
      throw new HubApiError(
        call.api,
        `${call.api} API refused the request for tenant ${call.tenantId}: ${last}`,
        status,
      );
    await attempts.backoff(retryAfter);
  }
  throw new HubApiError(
    call.api,
    `${call.api} API: gave up for tenant ${call.tenantId} ${attempts.describe()}: ${last}`,
  );
}
