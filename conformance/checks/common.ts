/** Assertions on errors and small helpers shared by the checks. */
import { isIP } from 'node:net';
import { ERROR_DOMAIN, ErrorReason } from '../../sdk/protocol.js';
import { expect, type Kit } from '../kit.js';
import { Code, decodeDetails, RpcError } from '../rpc.js';

/** Calls and expects failure with `code` (and `reason`, if given). */
export async function expectCode(k: Kit, client: object, method: string, req: object, code: Code, reason?: string): Promise<RpcError> {
  let err: RpcError;
  try {
    err = await k.rpc.callError(client, method, req);
  } catch (e) {
    throw new Error(`${method}: want ${Code[code]}${reason ? ` with reason ${reason}` : ''}, but the call succeeded`, { cause: e });
  }
  expect(err.code === code, `${method}: want ${Code[code]}${reason ? `/${reason}` : ''}, got ${err.message}`);
  if (reason) {
    expect(err.reason === reason, `${method}: ${Code[code]} without ErrorInfo reason ${reason} (got ${err.reason ?? 'no ErrorInfo'})`);
    expect(err.domain === ERROR_DOMAIN, `${method}: ErrorInfo domain is ${JSON.stringify(err.domain)}, want ${ERROR_DOMAIN}`);
  }
  return err;
}

/** Per-item google.rpc.Status of a batch result: asserts NOT_FOUND + INSTANCE_NOT_FOUND. */
export function expectItemInstanceNotFound(
  what: string,
  status: { code: number; message: string; details: { typeUrl: string; value: Uint8Array }[] } | undefined,
): void {
  expect(status, `${what}: no per-item error for an absent instance`);
  expect(status.code === Code.NOT_FOUND, `${what}: per-item code ${Code[status.code] ?? status.code}, want NOT_FOUND`);
  const d = decodeDetails(status.details);
  expect(
    d.reason === ErrorReason.INSTANCE_NOT_FOUND && d.domain === ERROR_DOMAIN,
    `${what}: per-item error lacks ErrorInfo ${ErrorReason.INSTANCE_NOT_FOUND} (domain ${ERROR_DOMAIN}); got ${d.reason ?? 'none'}/${d.domain ?? 'none'}`,
  );
}

/** Whether an InstanceExists answer (or error) means "does not exist". */
export async function instanceAbsent(k: Kit, node: object): Promise<boolean> {
  try {
    const r = await k.rpc.call<{ exists: boolean }>(k.rpc.conn.instances, 'InstanceExists', { meta: k.meta(), node });
    return !r.exists;
  } catch (err) {
    if (err instanceof RpcError && err.code === Code.NOT_FOUND && err.reason === ErrorReason.INSTANCE_NOT_FOUND) return true;
    throw err;
  }
}

/** Collects every page of a paged list with `pageSize`; fails on a repeated token or more than `maxPages`. */
export async function listAll<T>(
  k: Kit,
  client: object,
  method: string,
  field: string,
  pageSize: number,
  maxPages = 1000,
): Promise<{ items: T[]; pages: number }> {
  const items: T[] = [];
  let token = '';
  const seen = new Set<string>();
  for (let pages = 1; ; pages++) {
    const res = await k.rpc.call<Record<string, unknown>>(client, method, { meta: k.meta(), pageSize, pageToken: token });
    const page = (res[field] as T[] | undefined) ?? [];
    expect(pageSize === 0 || page.length <= pageSize, `${method}: page of ${page.length} items for page_size ${pageSize}`);
    items.push(...page);
    token = String(res.nextPageToken ?? '');
    if (!token) return { items, pages };
    expect(!seen.has(token), `${method}: next_page_token repeats (${token.slice(0, 40)}); paging would never end`);
    seen.add(token);
    expect(pages < maxPages, `${method}: more than ${maxPages} pages`);
  }
}

/** A valid node address (type set; IP literal for *_IP types). */
export function addressProblem(a: { type: number; address: string }): string | undefined {
  if (a.type === 0) return `address ${JSON.stringify(a.address)} has type UNSPECIFIED`;
  if ((a.type === 2 || a.type === 3) && isIP(a.address) === 0) return `IP address ${JSON.stringify(a.address)} is not an IP literal`;
  if (a.address.length === 0 || a.address.length > 253) return 'address is empty or longer than 253 characters';
  return undefined;
}

/** A providerID prefix as the host accepts it: `<scheme>://`, lowercase (host/ownership/nodes.ts). */
export const PROVIDER_ID_PREFIX = /^[a-z0-9]([-a-z0-9.+]*[a-z0-9])?:\/\/$/;

/** The providerID prefixes a provider owns: its declared provider_id_prefixes, else `<provider_name>://`. */
export function declaredPrefixes(caps: { providerName: string; providerIdPrefixes?: readonly string[] }): string[] {
  return caps.providerIdPrefixes && caps.providerIdPrefixes.length > 0 ? [...caps.providerIdPrefixes] : [`${caps.providerName}://`];
}
