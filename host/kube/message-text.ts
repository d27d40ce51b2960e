/**
 * Free text written into Kubernetes objects (Event messages, VolumeAttachment
 * errors, admission denials). Much of it comes from plugin error messages,
 * which the plugin controls: unsanitized, a plugin could forge extra lines in
 * `kubectl describe`, reorder text with bidi overrides, or make a write fail
 * by its size.
 */

/**
 * Longest message written, in UTF-8 bytes: the API server's limit for an
 * events.k8s.io note and a VolumeAttachment error (1024), which upstream
 * components also truncate core/v1 Event messages to.
 */
export const MAX_MESSAGE_BYTES = 1024;
/** Appended to a truncated message (upstream's suffix). */
export const TRUNCATION_SUFFIX = ' ...';

/** Line breaks and tabs: each becomes one space, so a message stays one line. */
const BREAKS = /\r\n|[\t\n\v\f\r\u0085\u2028\u2029]/g;
/**
 * Other control characters (C0, DEL, C1) and invisible characters that
 * change how the text around them is shown (bidi embeddings, overrides,
 * isolates and marks, zero-width joiners, BOM): escaped as `\uXXXX` so they
 * are visible and inert.
 */
// eslint-disable-next-line no-control-regex
const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g;
/** A UTF-16 surrogate without its pair (not encodable as UTF-8): becomes U+FFFD. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

const ANY_HIDDEN = new RegExp(`${BREAKS.source}|${HIDDEN.source}|${LONE_SURROGATE.source}`);

/**
 * Whether `text` has a character {@link sanitizeMessage} would change: a line
 * break, tab, control, bidi or invisible character, or a lone surrogate (which
 * the API server would store as U+FFFD, so the stored value would differ).
 */
export function hasHiddenCharacters(text: string): boolean {
  return ANY_HIDDEN.test(text);
}

const escape = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * `text` made safe to show as one line: line breaks and tabs become spaces,
 * other control and bidi characters are escaped (`\u001b`), lone surrogates
 * become U+FFFD; then, if longer than `maxBytes` UTF-8 bytes, cut on a
 * character boundary and ended with {@link TRUNCATION_SUFFIX}. Never longer
 * than `maxBytes` bytes.
 */
export function sanitizeMessage(text: string, maxBytes = MAX_MESSAGE_BYTES): string {
  // Bound the work first: no character grows beyond 6 UTF-16 units, and maxBytes bytes hold at most maxBytes characters.
  const head = text.length > maxBytes + 1 ? text.slice(0, maxBytes + 1) : text;
  const clean = head.replace(LONE_SURROGATE, '\ufffd').replace(BREAKS, ' ').replace(HIDDEN, escape);
  const bytes = Buffer.from(clean, 'utf8');
  if (bytes.length <= maxBytes && head.length === text.length) return clean;
  return truncateUtf8(clean, maxBytes - Buffer.byteLength(TRUNCATION_SUFFIX)) + TRUNCATION_SUFFIX;
}

/** The longest prefix of `s` (well-formed) whose UTF-8 encoding has at most `maxBytes` bytes. */
function truncateUtf8(s: string, maxBytes: number): string {
  let bytes = 0;
  let end = 0;
  for (const ch of s) {
    const n = Buffer.byteLength(ch, 'utf8');
    if (bytes + n > maxBytes) break;
    bytes += n;
    end += ch.length;
  }
  return s.slice(0, end);
}
