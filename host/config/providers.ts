/**
 * The providers a host runs. One provider comes from today's flags
 * (--cloud-provider, --cloud-config, --plugin-path / --plugin-endpoint,
 * --plugin-env, --provider-arg), exactly as before. Several come from a YAML
 * file, `--providers-config=FILE` (docs/flags.md, "Several providers"):
 *
 *   providers:
 *     - name: east                          # a DNS label: logs, metrics, /readyz
 *       pluginPath: /opt/ccm/ccm-provider-local.js   # exec mode, or:
 *       # pluginEndpoint: unix:///run/ccm/east.sock  # sidecar mode
 *       pluginEnv: [LOCALCLOUD_STATE_DIR=/var/lib/east]
 *       providerArgs: [--state=/var/lib/east]
 *       cloudConfig: /etc/ccm/east.json
 *       default: true
 *       routes: true                        # the route provider, if two implement routes
 *
 * Every key but `name` is optional and means what the flag of the same name
 * means for one provider; `providerFlags` and `controllers` are the
 * provider's own flags (sent in Configure) and own controllers (run while
 * leading), checked against its GetPluginInfo at start. The file is validated
 * whole: every problem is one line of one error.
 */
import fs from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { resolvePluginSource, type PluginSource } from './plugin.js';
import { fsErrorReason, isAbsent, Problems } from './validate.js';

/** One provider, validated. Paths are absolute. */
export interface ProviderConfig {
  /** Its name (--cloud-provider with one provider): a DNS label, unique in the host. */
  readonly name: string;
  readonly plugin: PluginSource;
  /** --plugin-env, resolved. */
  readonly pluginEnv: Readonly<Record<string, string>>;
  /** --provider-arg: words appended to a spawned plugin's command line. */
  readonly providerArgs: readonly string[];
  readonly cloudConfigPath: string | undefined;
  readonly cloudConfigOptional: boolean;
  /** The provider the host's controllers use (the first, or the one marked `default: true`). */
  readonly default: boolean;
  /**
   * The provider's own flags (ConfigureRequest.provider_args) and own
   * controllers (ConfigureRequest.controllers, while leading). With one
   * provider these are empty here and come from HostConfig.providerFlags /
   * providerControllers (the command line's provider-owned words).
   */
  readonly providerFlags: readonly string[];
  readonly controllers: readonly string[];
  /**
   * `routes: true`: this provider is the cluster's route provider (one per
   * cluster, issue 31 item 4). Needed only when two providers implement
   * routes; false with one provider.
   */
  readonly routes: boolean;
}

/** Largest --providers-config file read. */
export const MAX_PROVIDERS_FILE_BYTES = 256 * 1024;
/** Most providers in one host. */
export const MAX_PROVIDERS = 16;
/** Most entries of one list key (pluginEnv, providerArgs, providerFlags, controllers). */
const MAX_LIST_ENTRIES = 128;
/** Longest string value. */
const MAX_STRING_CHARS = 4096;

const PROVIDER_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Variables the host sets for the plugin itself (sdk/protocol.ts); the operator cannot override them. */
const RESERVED_ENV_PREFIX = 'CCM_PLUGIN_';

const TOP_KEYS = ['providers'] as const;
const PROVIDER_KEYS = [
  'name',
  'pluginPath',
  'pluginEndpoint',
  'pluginEnv',
  'providerArgs',
  'providerFlags',
  'controllers',
  'cloudConfig',
  'cloudConfigOptional',
  'default',
  'routes',
] as const;

/**
 * The single-provider flags that --providers-config replaces: giving one of
 * them with the file is a conflict (which would win is not obvious).
 */
export const SINGLE_PROVIDER_FLAGS = [
  'cloud-provider',
  'cloud-config',
  'cloud-config-optional',
  'plugin-path',
  'plugin-endpoint',
  'plugin-env',
  'provider-arg',
] as const;

/** `NAME=VALUE` → that pair; `NAME` → the host's value of NAME, if any (a warning when none). `what` names the setting in messages. */
export function resolvePluginEnv(
  entries: readonly string[],
  env: NodeJS.ProcessEnv,
  p: Problems,
  warnings: string[],
  what = '--plugin-env',
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of entries) {
    const eq = entry.indexOf('=');
    const name = eq < 0 ? entry : entry.slice(0, eq);
    if (!ENV_NAME.test(name)) {
      p.add(
        `${what}=${JSON.stringify(entry)} is invalid: use NAME or NAME=VALUE, where NAME is letters, digits and _ and does not start with a digit`,
      );
    } else if (name.startsWith(RESERVED_ENV_PREFIX)) {
      p.add(`${what}=${name}: variables starting with ${RESERVED_ENV_PREFIX} are set by the host for the plugin protocol: remove this entry`);
    } else if (eq >= 0) {
      out[name] = entry.slice(eq + 1);
    } else if (env[name] !== undefined) {
      out[name] = env[name];
    } else {
      warnings.push(`${what}=${name}: ${name} is not set in the host's environment, so the plugin will not get it`);
    }
  }
  return out;
}

/** Dependencies of readProvidersFile that tests replace. */
export interface ProvidersFileDeps {
  env: NodeJS.ProcessEnv;
  localPluginPath?: string;
}

/**
 * Reads and validates the --providers-config file `file`: the providers, in
 * file order, exactly one of them `default`; or undefined with every problem
 * recorded in `p` (one line each, naming the file and the provider).
 */
export function readProvidersFile(file: string, p: Problems, warnings: string[], deps: ProvidersFileDeps): ProviderConfig[] | undefined {
  const flag = `--providers-config ${file}`;
  let text: string;
  try {
    if (!fs.statSync(file).isFile()) throw Object.assign(new Error('not a regular file'), { code: 'NOTFILE' });
    if (fs.statSync(file).size > MAX_PROVIDERS_FILE_BYTES) {
      p.add(`${flag} is larger than ${MAX_PROVIDERS_FILE_BYTES} bytes, the limit: list only the providers and how to start them`);
      return undefined;
    }
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    p.add(`cannot read ${flag}: ${fsErrorReason(err)}: pass the path of a readable YAML file`);
    return undefined;
  }
  let doc: unknown;
  try {
    doc = yaml.load(text, { filename: file, json: false });
  } catch (err) {
    p.add(`${flag} is not valid YAML: ${(err as Error).message.split('\n')[0]}`);
    return undefined;
  }
  return checkProvidersDocument(doc, flag, p, warnings, deps);
}

/** The document of a providers file (what js-yaml loaded), validated; `where` starts every problem. */
export function checkProvidersDocument(
  doc: unknown,
  where: string,
  p: Problems,
  warnings: string[],
  deps: ProvidersFileDeps,
): ProviderConfig[] | undefined {
  const before = p.errors.length;
  if (!isObject(doc)) {
    p.add(`${where}: want a mapping with a "providers" list, e.g. providers: [{name: east, pluginPath: /opt/ccm/ccm-provider-east}]`);
    return undefined;
  }
  unknownKeys(doc, TOP_KEYS, where, p);
  const list = doc.providers;
  if (!Array.isArray(list) || list.length === 0) {
    p.add(`${where}: "providers" must be a non-empty list of providers`);
    return undefined;
  }
  if (list.length > MAX_PROVIDERS) p.add(`${where}: ${list.length} providers, more than the limit of ${MAX_PROVIDERS}`);
  const out: ProviderConfig[] = [];
  const seen = new Map<string, number>();
  list.slice(0, MAX_PROVIDERS).forEach((entry: unknown, i) => {
    const name = isObject(entry) && typeof entry.name === 'string' ? entry.name : undefined;
    const at = `${where}: providers[${i}]${name !== undefined && name.length <= 63 ? ` (${name})` : ''}`;
    const first = name !== undefined ? seen.get(name) : undefined;
    if (first !== undefined) p.add(`${at}: duplicate name ${JSON.stringify(name)} (also providers[${first}]): give each provider its own name`);
    else if (name !== undefined) seen.set(name, i);
    const provider = checkProvider(entry, at, p, warnings, deps);
    if (provider) out.push(provider);
  });
  const defaults = list.filter((e: unknown) => isObject(e) && e.default === true).length;
  if (defaults > 1) p.add(`${where}: ${defaults} providers are marked "default: true": mark at most one (without any, the first is the default)`);
  const routers = list.filter((e: unknown) => isObject(e) && e.routes === true).length;
  if (routers > 1) p.add(`${where}: ${routers} providers are marked "routes: true": a cluster has one route provider, mark at most one`);
  if (p.errors.length > before) return undefined;
  const chosen = defaults === 0 ? 0 : out.findIndex((x) => x.default);
  return out.map((x, i) => ({ ...x, default: i === chosen }));
}

function checkProvider(entry: unknown, at: string, p: Problems, warnings: string[], deps: ProvidersFileDeps): ProviderConfig | undefined {
  if (!isObject(entry)) {
    p.add(`${at}: want a mapping with at least "name" and "pluginPath" or "pluginEndpoint"`);
    return undefined;
  }
  const before = p.errors.length;
  unknownKeys(entry, PROVIDER_KEYS, at, p);
  const name = str(entry, 'name', at, p);
  if (name === undefined) p.add(`${at}: "name" is required: a DNS label, e.g. name: east`);
  else if (!PROVIDER_NAME.test(name)) {
    p.add(`${at}: name ${JSON.stringify(name.slice(0, 80))} is invalid: use lowercase letters, digits and "-" (a DNS label, at most 63 characters)`);
  }
  const pluginPath = str(entry, 'pluginPath', at, p);
  const pluginEndpoint = str(entry, 'pluginEndpoint', at, p);
  const providerArgs = list(entry, 'providerArgs', at, p);
  const cloudConfig = str(entry, 'cloudConfig', at, p);
  const cloudConfigOptional = bool(entry, 'cloudConfigOptional', at, p);
  const isDefault = bool(entry, 'default', at, p);
  const routes = bool(entry, 'routes', at, p);
  let plugin: PluginSource | undefined;
  if (pluginPath === undefined && pluginEndpoint === undefined) {
    p.add(`${at}: no start method: set "pluginPath" (the host spawns the plugin) or "pluginEndpoint" (it connects to a running one)`);
  } else if (pluginPath !== undefined && pluginEndpoint !== undefined) {
    p.add(`${at}: both "pluginPath" and "pluginEndpoint" are set: keep the one that says how this provider runs`);
  } else {
    // The flags' rules and messages, with the keys' names.
    const sub = new Problems();
    plugin = resolvePluginSource(
      {
        cloudProvider: name !== undefined && PROVIDER_NAME.test(name) ? name : undefined,
        pluginPath,
        pluginEndpoint,
        localPluginPath: deps.localPluginPath,
      },
      sub,
    );
    for (const e of sub.errors) p.add(`${at}: ${e.replace(/--plugin-path/g, 'pluginPath').replace(/--plugin-endpoint/g, 'pluginEndpoint')}`);
  }
  if (pluginEndpoint !== undefined && providerArgs.length > 0) {
    p.add(
      `${at}: "providerArgs" has no plugin to go to: with "pluginEndpoint" the host does not start the provider, so put them in its container's args`,
    );
  }
  if (cloudConfig === undefined) {
    if (cloudConfigOptional) p.add(`${at}: "cloudConfigOptional: true" needs "cloudConfig"`);
  } else if (!(cloudConfigOptional && isAbsent(cloudConfig))) {
    const sub = new Problems();
    sub.readableFile('cloud-config', cloudConfig);
    for (const e of sub.errors) p.add(`${at}: ${e.replace('--cloud-config', 'cloudConfig')}`);
  }
  const pluginEnv = resolvePluginEnv(list(entry, 'pluginEnv', at, p), deps.env, p, warnings, `${at}: pluginEnv`);
  const providerFlags = list(entry, 'providerFlags', at, p);
  const bad = providerFlags.find((f) => !f.startsWith('--'));
  if (bad !== undefined) p.add(`${at}: providerFlags entry ${JSON.stringify(bad.slice(0, 80))} is not a flag: write it as --name=value`);
  const controllers = list(entry, 'controllers', at, p);
  if (p.errors.length > before || name === undefined || plugin === undefined) return undefined;
  return {
    name,
    plugin,
    pluginEnv,
    providerArgs,
    cloudConfigPath: cloudConfig === undefined ? undefined : path.resolve(cloudConfig),
    cloudConfigOptional,
    default: isDefault,
    providerFlags,
    controllers,
    routes,
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function unknownKeys(obj: Record<string, unknown>, known: readonly string[], at: string, p: Problems): void {
  const unknown = Object.keys(obj).filter((k) => !known.includes(k));
  if (unknown.length > 0) {
    p.add(
      `${at}: unknown key${unknown.length > 1 ? 's' : ''} ${unknown
        .slice(0, 10)
        .map((k) => JSON.stringify(k.slice(0, 80)))
        .join(', ')}: the known keys are ${known.join(', ')}`,
    );
  }
}

function str(obj: Record<string, unknown>, key: string, at: string, p: Problems): string | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v === '') {
    p.add(`${at}: "${key}" must be a non-empty string`);
    return undefined;
  }
  if (v.length > MAX_STRING_CHARS) {
    p.add(`${at}: "${key}" is longer than ${MAX_STRING_CHARS} characters`);
    return undefined;
  }
  return v;
}

function bool(obj: Record<string, unknown>, key: string, at: string, p: Problems): boolean {
  const v = obj[key];
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') {
    p.add(`${at}: "${key}" must be true or false`);
    return false;
  }
  return v;
}

function list(obj: Record<string, unknown>, key: string, at: string, p: Problems): string[] {
  const v = obj[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || x.length > MAX_STRING_CHARS)) {
    p.add(`${at}: "${key}" must be a list of strings (each at most ${MAX_STRING_CHARS} characters)`);
    return [];
  }
  if (v.length > MAX_LIST_ENTRIES) {
    p.add(`${at}: "${key}" has ${v.length} entries, more than the limit of ${MAX_LIST_ENTRIES}`);
    return [];
  }
  return v as string[];
}
