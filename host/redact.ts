/**
 * Secret values the host knows (API tokens, secret fields of the cloud
 * config, secret-looking --plugin-env values) and their removal from text
 * that leaves the process: log lines, Event messages, and plugin error
 * messages (which the plugin controls and may echo its configuration into).
 *
 * The cloud config is opaque bytes to the host; its fields count as secret
 * when the config parses as a JSON object and a key's name says so (see
 * SECRET_NAME). Values shorter than MIN_SECRET_LENGTH are not tracked, since
 * replacing them would mangle ordinary words.
 */

/** Names of keys and variables whose values are secret. */
export const SECRET_NAME = /(secret|passw(or)?d|token|credential|api[-_]?key|private[-_]?key|access[-_]?key|auth)/i;

/** What a secret is replaced with. */
export const REDACTED = '[redacted]';

const MIN_SECRET_LENGTH = 6;

/** Process-wide: one host process has one set of credentials (tests run several hosts; the set only grows). */
const secrets = new Set<string>();
let pattern: RegExp | undefined;

/** Tracks `value` as a secret from now on. */
export function registerSecret(value: string | undefined): void {
  if (value === undefined || value.length < MIN_SECRET_LENGTH || secrets.has(value)) return;
  secrets.add(value);
  // Longest first, so a secret that contains another is replaced whole.
  const sorted = [...secrets].sort((a, b) => b.length - a.length);
  pattern = new RegExp(sorted.map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
}

/** `text` with every tracked secret replaced by REDACTED (also in JSON-escaped form). */
export function redact(text: string): string {
  if (!pattern) return text;
  let out = text.replace(pattern, REDACTED);
  // A secret with quotes or backslashes appears escaped inside JSON log lines.
  for (const s of secrets) {
    const escaped = JSON.stringify(s).slice(1, -1);
    if (escaped !== s && out.includes(escaped)) out = out.split(escaped).join(REDACTED);
  }
  return out;
}

/** Registers every string under a secret-named key of a JSON cloud config (any depth). Not JSON: nothing to find. */
export function registerCloudConfigSecrets(config: Uint8Array): void {
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(config).toString('utf8'));
  } catch {
    return;
  }
  const walk = (v: unknown, secretParent: boolean) => {
    if (typeof v === 'string') {
      if (secretParent) registerSecret(v);
    } else if (Array.isArray(v)) {
      for (const x of v) walk(x, secretParent);
    } else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) walk(x, secretParent || SECRET_NAME.test(k));
    }
  };
  walk(doc, false);
}

/** Registers the values of secret-named `--plugin-env` entries. */
export function registerEnvSecrets(env: Readonly<Record<string, string>>): void {
  for (const [name, value] of Object.entries(env)) if (SECRET_NAME.test(name)) registerSecret(value);
}
