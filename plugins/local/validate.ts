/**
 * Syntax checks for Kubernetes-style names and labels, shared by the cloud
 * and the CLI. Each `check*` returns why a value is invalid, or undefined.
 */

/** Longest DNS subdomain (and Kubernetes object name), in characters. */
const MAX_DNS_SUBDOMAIN_LENGTH = 253;
/** Longest DNS label, label name part, or label value, in characters. */
const MAX_LABEL_LENGTH = 63;

const DNS_LABEL_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_NAME_RE = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** A lowercase RFC 1123 subdomain such as a node name. */
export function checkDnsSubdomain(s: string, what: string): string | undefined {
  if (s.length === 0) return `${what} must not be empty`;
  if (s.length > MAX_DNS_SUBDOMAIN_LENGTH) return `${what} ${JSON.stringify(s)} is longer than ${MAX_DNS_SUBDOMAIN_LENGTH} characters`;
  if (!s.split('.').every((part) => part.length <= MAX_LABEL_LENGTH && DNS_LABEL_RE.test(part))) {
    return `${what} ${JSON.stringify(s)} must be lowercase letters, digits, '-' and '.', starting and ending with a letter or digit`;
  }
  return undefined;
}

/** A label value (may be empty). */
export function checkLabelValue(s: string, what: string): string | undefined {
  if (s.length === 0) return undefined;
  if (s.length > MAX_LABEL_LENGTH) return `${what} ${JSON.stringify(s)} is longer than ${MAX_LABEL_LENGTH} characters`;
  if (!LABEL_NAME_RE.test(s))
    return `${what} ${JSON.stringify(s)} must be letters, digits, '-', '_' and '.', starting and ending with a letter or digit`;
  return undefined;
}

/** A non-empty label value, as used for zones, regions and instance types. */
export function checkToken(s: string, what: string): string | undefined {
  return s.length === 0 ? `${what} must not be empty` : checkLabelValue(s, what);
}

/** A label key: `[prefix/]name` with a DNS-subdomain prefix. */
export function checkLabelKey(s: string): string | undefined {
  const slash = s.indexOf('/');
  const prefix = slash >= 0 ? s.slice(0, slash) : undefined;
  const name = slash >= 0 ? s.slice(slash + 1) : s;
  if (prefix !== undefined) {
    const p = checkDnsSubdomain(prefix, 'label key prefix');
    if (p) return p;
  }
  if (name.length === 0) return `label key ${JSON.stringify(s)} has an empty name`;
  if (name.length > MAX_LABEL_LENGTH || !LABEL_NAME_RE.test(name)) {
    return `label key ${JSON.stringify(s)} must be [prefix/]name with a name of at most ${MAX_LABEL_LENGTH} letters, digits, '-', '_' and '.'`;
  }
  return undefined;
}

/** Throws a TypeError with the first problem found. */
export function must(problem: string | undefined): void {
  if (problem) throw new TypeError(problem);
}
