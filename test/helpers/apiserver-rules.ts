/**
 * The API server's validation rules for the fields the host fills from
 * provider answers, restated independently of host/plugin/validate*.ts (from
 * k8s.io/apimachinery validation and pkg/apis/core and storage validation),
 * plus the host's own stricter rule where the API server accepts anything
 * but a bad value would mislead or be permanent (printable ASCII). Unit
 * properties check the host never accepts what these reject; the
 * integration test checks the same against the real API server.
 */

/** IsDNS1123Subdomain. */
export function isDns1123Subdomain(s: string): boolean {
  return s.length >= 1 && s.length <= 253 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(s);
}

/** IsQualifiedName: [prefix/]name, name 1..63 of [-A-Za-z0-9_.] with alphanumeric ends. */
export function isQualifiedName(s: string): boolean {
  const parts = s.split('/');
  if (parts.length > 2) return false;
  const name = parts.length === 2 ? parts[1]! : parts[0]!;
  if (parts.length === 2 && !isDns1123Subdomain(parts[0]!)) return false;
  return name.length >= 1 && name.length <= 63 && /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/.test(name);
}

/** IsValidLabelValue: empty, or ≤ 63 of [-A-Za-z0-9_.] with alphanumeric ends. */
export function isValidLabelValue(s: string): boolean {
  return s.length <= 63 && /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/.test(s);
}

/** The host's rule for identifiers the API server stores unchecked (providerID, volumeHandle): printable ASCII, no spaces. */
export function isPrintableAsciiId(s: string): boolean {
  return /^[\x21-\x7e]+$/.test(s);
}

/** Text that round-trips through UTF-8 unchanged (Go replaces lone surrogates with U+FFFD). */
export function isWellFormed(s: string): boolean {
  return !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);
}

/** Characters that make stored text show differently from what it is. */
// eslint-disable-next-line no-control-regex
export const HIDDEN_CHARACTER = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff]/;

/** VolumeAttachment status.attachmentMetadata: at most 256 KiB of keys and values (bytes). */
export const MAX_ATTACHMENT_METADATA_BYTES = 256 * 1024;
export function attachmentMetadataBytes(m: Record<string, string>): number {
  return Object.entries(m).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0);
}

/** VolumeError.message and an events.k8s.io note: at most 1024 bytes. */
export const MAX_NOTE_BYTES = 1024;
