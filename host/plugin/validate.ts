/**
 * Validation of everything a provider answers, before any of it can reach
 * the API server. Each function returns the list of problems (empty = valid);
 * callers turn a non-empty list into InvalidCloudResponseError, so a bad
 * answer becomes an event and a retry, never an invalid write.
 */
import type { InstanceMetadata, NodeAddress, NodeAddressType } from '../cloud.js';
import { hasHiddenCharacters } from '../kube/message-text.js';
import { canonicalIp } from '../util/canonical-ip.js';

export const MAX_ADDRESSES = 64;
export const MAX_ADDITIONAL_LABELS = 64;
const MAX_PROVIDER_ID_CHARS = 512;
const LABEL_NAME = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/**
 * The API server accepts any providerID once, then never a change: the host
 * allows only printable ASCII without spaces (what every cloud uses), so a
 * bad answer cannot become permanent.
 */
const PROVIDER_ID = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?:\/\/[\x21-\x7e]+$/;
/**
 * A value for an error message: JSON-quoted, cut at 80 characters, and
 * everything outside printable ASCII escaped (`\u202e`), so a problem shows
 * exactly what was wrong and cannot itself carry hidden characters.
 */
export const quote = (s: string) =>
  JSON.stringify(s.length > 80 ? s.slice(0, 80) + '…' : s).replace(/[^\x20-\x7e]/g, (c) =>
    c === '…' ? c : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );

/** Free text stored as is (volume attributes, attachment metadata): no control, bidi or invisible characters. */
export function plainTextProblem(what: string, v: string): string | undefined {
  return hasHiddenCharacters(v) ? `${what} ${quote(v)} contains control, bidi or invisible characters` : undefined;
}

/** An identifier the host stores or shows (volume id, route name): 1..max printable ASCII characters without spaces. */
export function printableIdProblem(what: string, v: string, max: number): string | undefined {
  if (v.length === 0 || v.length > max) return `${what} must be 1..${max} characters`;
  if (!/^[\x21-\x7e]+$/.test(v)) return `${what} ${quote(v)} has characters outside printable ASCII (or spaces)`;
  return undefined;
}

/** A Kubernetes label value: empty, or ≤ 63 chars of [A-Za-z0-9_.-] starting and ending alphanumeric. */
export function labelValueProblem(v: string): string | undefined {
  if (v === '') return undefined;
  if (v.length > 63) return `label value ${quote(v)} is longer than 63 characters`;
  if (!LABEL_NAME.test(v)) return `label value ${quote(v)} has characters outside [A-Za-z0-9_.-] or does not start and end alphanumeric`;
  return undefined;
}

/** A Kubernetes label key: [prefix/]name, prefix a DNS subdomain ≤ 253, name ≤ 63. */
export function labelKeyProblem(k: string): string | undefined {
  const slash = k.indexOf('/');
  const prefix = slash >= 0 ? k.slice(0, slash) : '';
  const name = slash >= 0 ? k.slice(slash + 1) : k;
  if (slash >= 0 && (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) {
    return `label key ${quote(k)} has an invalid prefix (want a DNS subdomain)`;
  }
  if (name.length === 0 || name.length > 63 || !LABEL_NAME.test(name)) return `label key ${quote(k)} has an invalid name part`;
  return undefined;
}

/** A DNS name as used in addresses: ≤ 253 chars, lowercase labels. */
export function dnsNameProblem(v: string): string | undefined {
  if (v.length === 0 || v.length > 253) return `DNS name ${quote(v)} must be 1..253 characters`;
  if (!DNS_SUBDOMAIN.test(v)) return `DNS name ${quote(v)} is not a valid lowercase DNS name`;
  if (v.split('.').some((l) => l.length > 63)) return `DNS name ${quote(v)} has a label longer than 63 characters`;
  return undefined;
}

/**
 * A plain IPv4 or IPv6 literal (no zone, no CIDR) whose meaning is
 * unambiguous (util/canonical-ip.ts: no leading zeros, not IPv4-mapped). It
 * may still be spelled non-canonically; callers write canonicalIpText(v).
 */
export function ipProblem(v: string): string | undefined {
  const r = canonicalIp(v);
  return 'problem' in r ? r.problem : undefined;
}

/** The canonical text of an IP that passed ipProblem (e.g. "2001:DB8:0:0::1" → "2001:db8::1"). */
export function canonicalIpText(v: string): string {
  const r = canonicalIp(v);
  if ('problem' in r) throw new TypeError(`canonicalIpText: ${r.problem}`);
  return r.ip;
}

export function providerIdProblem(v: string): string | undefined {
  if (v.length > MAX_PROVIDER_ID_CHARS) return `providerID is longer than ${MAX_PROVIDER_ID_CHARS} characters`;
  if (!PROVIDER_ID.test(v)) return `providerID ${quote(v)} is not of the form <provider>://<id> (printable ASCII, no spaces)`;
  return undefined;
}

const IP_TYPES: ReadonlySet<NodeAddressType> = new Set(['InternalIP', 'ExternalIP']);

export function addressesProblems(addrs: NodeAddress[]): string[] {
  const problems: string[] = [];
  if (addrs.length > MAX_ADDRESSES) return [`${addrs.length} addresses, at most ${MAX_ADDRESSES} allowed`];
  const seen = new Set<string>();
  for (const a of addrs) {
    const p = IP_TYPES.has(a.type) ? ipProblem(a.address) : a.type === 'Hostname' ? hostnameProblem(a.address) : dnsNameProblem(a.address);
    if (p) problems.push(`${a.type} address: ${p}`);
    // Spellings of one IP are one address: "2001:DB8::1" and "2001:db8::1" are a duplicate.
    const key = `${a.type}/${IP_TYPES.has(a.type) && !p ? canonicalIpText(a.address) : a.address}`;
    if (seen.has(key)) problems.push(`duplicate address ${a.type} ${quote(a.address)}`);
    seen.add(key);
  }
  return problems;
}

/**
 * The addresses as written to status.addresses: IPs in canonical text
 * (KEP-4858), everything else as answered. Only for a list addressesProblems
 * found no problem in.
 */
export function canonicalAddresses(addrs: NodeAddress[]): NodeAddress[] {
  return addrs.map((a) => (IP_TYPES.has(a.type) ? { ...a, address: canonicalIpText(a.address) } : a));
}

function hostnameProblem(v: string): string | undefined {
  // Kubelet reports hostnames that may contain upper case; accept them as DNS-ish names. ASCII
  // letters only: toLowerCase() would turn the Kelvin sign U+212A into "k" and let it through.
  return dnsNameProblem(v.replace(/[A-Z]/g, (c) => c.toLowerCase()));
}

/**
 * Checks metadata that will become providerID, labels and status.addresses.
 * `existingProviderId` allows an empty providerID when the node has one.
 */
export function instanceMetadataProblems(m: InstanceMetadata, existingProviderId: string, owned: string | readonly string[]): string[] {
  // `owned`: the provider name (its prefix is "<name>://") or the providerID prefixes it declares.
  const prefixes = typeof owned === 'string' ? [`${owned}://`] : owned;
  const problems: string[] = [];
  if (m.providerId === '') {
    if (!existingProviderId) problems.push('providerID is empty and the node has none');
  } else {
    const p = providerIdProblem(m.providerId);
    if (p) problems.push(p);
    else if (!prefixes.some((prefix) => m.providerId.startsWith(prefix)))
      problems.push(
        prefixes.length === 1
          ? `providerID ${quote(m.providerId)} does not start with the plugin's provider name "${prefixes[0]}"`
          : `providerID ${quote(m.providerId)} does not start with any of the plugin's providerID prefixes ${prefixes.map((x) => quote(x)).join(', ')}`,
      );
  }
  problems.push(...addressesProblems(m.nodeAddresses));
  for (const [what, v] of [
    ['instance type', m.instanceType],
    ['zone', m.zone],
    ['region', m.region],
  ] as const) {
    const p = labelValueProblem(v);
    if (p) problems.push(`${what}: ${p}`);
  }
  const extra = Object.entries(m.additionalLabels);
  if (extra.length > MAX_ADDITIONAL_LABELS) problems.push(`${extra.length} additional labels, at most ${MAX_ADDITIONAL_LABELS} allowed`);
  else
    for (const [k, v] of extra) {
      const p = labelKeyProblem(k) ?? labelValueProblem(v);
      if (p) problems.push(`additional label: ${p}`);
    }
  return problems;
}
