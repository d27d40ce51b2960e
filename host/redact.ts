/**
 * Secret values the host knows (API tokens, secret fields of the cloud
 * config, secret-looking --plugin-env values) and their removal from text
 * that leaves the process: log lines, Event messages, and plugin error
 * messages (which the plugin controls and may echo its configuration into).
 *
 * The cloud config is opaque bytes to the host; it is read as YAML (which
 * covers JSON) and as INI (gcfg-style `[Section "name"]` with `key = value`,
 * as upstream providers' cloud.conf), and every parse that succeeds
 * contributes: every string under a secret-named key (see isSecretName), at
 * any depth, is a secret. Inside any string value, the secret-named parts of
 * a connection string (`AccountKey=...;`) and the password of a URL
 * (`https://user:pw@host`) are secrets too. So are values as the file writes
 * them (quoted, escaped) in `name = value` / `name: value` pairs with a
 * secret name, even in a file no parser accepts, since a provider may echo
 * the file itself. Values shorter than MIN_SECRET_LENGTH are not tracked,
 * since replacing them would mangle ordinary words; MAX_SECRET_LENGTH and
 * MAX_SECRETS bound the pattern every log line is matched against.
 */
import ini from 'ini';
import yaml from 'js-yaml';

/**
 * Final words that make a name secret: a name is compared lowercased with
 * separators removed, so `aadClientSecret`, `client-secret`, `CLIENT_SECRET`
 * and `clientsecret` all end in `secret`. Only the end counts, because a name
 * ends with what its value is: `keyPair`, `keyName`, `accessKeyId`,
 * `secretName`, `tokenUrl`, `auth-url` are identifiers or places, not secrets.
 * Erring the other way is accepted: `publicKey` or `hotkey` values are hidden
 * too (harmless).
 */
const SECRET_END = /(password|passwd|pwd|passphrase|secrets?|tokens?|keys?|credentials?|creds|connectionstring)$/;
/** Trailing words that say how a secret is encoded, not what it is (`privateKeyData`, `clientSecretB64`). */
const ENCODING_END = /(data|value|base64|b64|pem)$/;

/** Whether a key or variable with this name holds a secret (see SECRET_END). */
export function isSecretName(name: string): boolean {
  const n = name.toLowerCase().replace(/[^a-z0-9]/g, '');
  return SECRET_END.test(n) || SECRET_END.test(n.replace(ENCODING_END, ''));
}

/** What a secret is replaced with. */
export const REDACTED = '[redacted]';

const MIN_SECRET_LENGTH = 6;
/**
 * Longest value tracked whole (an RSA 4096 PEM key is about 3.2 KiB); a
 * longer one is tracked by its lines. Together with MAX_SECRETS this bounds
 * the pattern every log line is matched against.
 */
const MAX_SECRET_LENGTH = 4096;
/** Most values tracked; a config with more secret values than this is reported at start (untrackedSecrets). */
const MAX_SECRETS = 512;

/** Process-wide: one host process has one set of credentials (tests run several hosts; the set only grows). */
const secrets = new Set<string>();
/** Matches every form of every secret; rebuilt lazily after registrations (a config may register many). */
let pattern: RegExp | undefined;
/** Every form of every secret (see rebuildPattern), for redactCut. */
let forms: string[] = [];
let stale = false;
let untracked = 0;
/** The shortest start of a secret that redactCut hides at the end of cut text; shorter ones tell too little. */
const MIN_CUT_PREFIX = 3;

/** JSON string escaping without the quotes. */
const escapeJson = (s: string) => JSON.stringify(s).slice(1, -1);

/**
 * Tracks `value` as a secret from now on, and each line of a multi-line value
 * on its own (a provider may print it line by line).
 */
export function registerSecret(value: string | undefined): void {
  if (value === undefined || value.length < MIN_SECRET_LENGTH || secrets.has(value)) return;
  if (value.includes('\n')) for (const line of value.split(/\r?\n/)) registerSecret(line);
  if (value.length > MAX_SECRET_LENGTH) {
    if (!value.includes('\n')) untracked++;
    return;
  }
  if (secrets.size >= MAX_SECRETS) {
    untracked++;
    return;
  }
  secrets.add(value);
  stale = true;
}

/** How many secret values were not tracked, being too many or too long (the host warns at start). */
export function untrackedSecrets(): number {
  return untracked;
}

/** `text` with every tracked secret replaced by REDACTED (also in once or twice JSON-escaped form). */
export function redact(text: string): string {
  if (stale) rebuildPattern();
  return pattern ? text.replace(pattern, REDACTED) : text;
}

function rebuildPattern(): void {
  stale = false;
  // A secret with quotes or backslashes appears escaped inside JSON log lines, and twice
  // escaped when a plugin logs it JSON-quoted (its stderr line becomes a JSON string field).
  // Longest first, so a secret that contains another is replaced whole.
  forms = [...new Set([...secrets].flatMap((x) => [x, escapeJson(x), escapeJson(escapeJson(x))]))].sort((a, b) => b.length - a.length);
  pattern = new RegExp(forms.map((x) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
}

/**
 * redact() for text that was cut at a length limit: a secret the cut split
 * left only its start at the end, which redact() cannot recognize; that start
 * is replaced too (from MIN_CUT_PREFIX characters on).
 */
export function redactCut(text: string): string {
  const out = redact(text);
  for (const form of forms) {
    for (let n = Math.min(form.length - 1, out.length); n >= MIN_CUT_PREFIX; n--) {
      if (out.endsWith(form.slice(0, n))) return out.slice(0, out.length - n) + REDACTED;
    }
  }
  return out;
}

/** The secret parts of one string value: `Name=value;` pairs with secret names, and a URL's password. */
function registerEmbeddedSecrets(value: string): void {
  if (value.includes(';') || value.includes('=')) {
    for (const part of value.split(';')) {
      const eq = part.indexOf('=');
      if (eq > 0 && isSecretName(part.slice(0, eq).trim())) registerSecret(part.slice(eq + 1).trim());
    }
  }
  if (/^[a-z][a-z0-9+.-]*:\/\/[^/@\s]*:[^/@\s]*@/i.test(value)) {
    try {
      const password = new URL(value).password;
      registerSecret(password);
      registerSecret(decodeURIComponent(password));
    } catch {
      // Not a URL after all.
    }
  }
}

/** Registers the strings of a parsed document: all of them under a secret-named key, any depth. */
function registerDocumentSecrets(doc: unknown): void {
  // YAML aliases share objects: visiting each (object, inherited) pair once keeps an alias bomb linear.
  const seen = [new Set<object>(), new Set<object>()];
  const walk = (v: unknown, secretParent: boolean) => {
    if (typeof v === 'string') {
      if (secretParent) registerSecret(v);
      registerEmbeddedSecrets(v);
    } else if (v !== null && typeof v === 'object') {
      const visited = seen[secretParent ? 1 : 0]!;
      if (visited.has(v)) return;
      visited.add(v);
      if (Array.isArray(v)) for (const x of v) walk(x, secretParent);
      else for (const [k, x] of Object.entries(v)) walk(x, secretParent || isSecretName(k));
    }
  };
  walk(doc, false);
}

/** A line that is one `name = value` / `name: value` (INI, YAML): the value may hold spaces. */
const RAW_LINE = /^\s*["']?([\w.-]{1,64})["']?\s*[:=](.*)$/;
/** `name: value` pairs anywhere in a line (JSON, flow YAML, also malformed); names bounded, so linear. */
const RAW_PAIR = /(?<![\w.-])["']?([\w.-]{1,64})["']?\s*[:=]\s*("(?:[^"\\]|\\.)*"|'[^']*'|[^\s,;}\]]+)/g;

/** Registers `value` as written and, when it is quoted, without its quotes (before any unescaping). */
function registerRawValue(value: string): void {
  registerSecret(value);
  if (/^(["']).*\1$/.test(value)) registerSecret(value.slice(1, -1));
}

/**
 * Registers secret values as the file writes them, even where no parser
 * accepts the file (a provider may echo a malformed config in its error).
 */
function registerRawSecrets(text: string): void {
  for (const line of text.split('\n')) {
    const whole = RAW_LINE.exec(line);
    if (whole && isSecretName(whole[1]!)) registerRawValue(whole[2]!.trim().replace(/,$/, ''));
    for (const m of line.matchAll(RAW_PAIR)) if (isSecretName(m[1]!)) registerRawValue(m[2]!);
  }
}

/**
 * Registers the secrets of a cloud config in any of the formats providers use
 * (JSON, YAML, INI/gcfg); whatever does not parse as a format contributes
 * nothing. Never throws, and never logs: a parse error quotes the config.
 */
export function registerCloudConfigSecrets(config: Uint8Array): void {
  const text = Buffer.from(config).toString('utf8');
  registerRawSecrets(text);
  const parsers: ((s: string) => unknown)[] = [
    // Failsafe schema: every scalar stays a string (a numeric password is still a password); json: duplicate keys are allowed, as in JSON.parse.
    (s) => yaml.load(s, { schema: yaml.FAILSAFE_SCHEMA, json: true }),
    // Repeated keys (gcfg's multi-valued variables) become arrays instead of overwriting each other.
    (s) => ini.parse(s, { bracketedArray: false }),
  ];
  for (const parse of parsers) {
    try {
      registerDocumentSecrets(parse(text));
    } catch {
      // Not this format (or too deeply nested to walk): the other parsers still count.
    }
  }
}

/** Registers the values of secret-named `--plugin-env` entries. */
export function registerEnvSecrets(env: Readonly<Record<string, string>>): void {
  for (const [name, value] of Object.entries(env)) {
    if (isSecretName(name)) registerSecret(value);
    registerEmbeddedSecrets(value);
  }
}
