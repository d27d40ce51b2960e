/**
 * Where the provider plugin comes from (plugin-protocols.md §4.1):
 *  - exec mode, `--plugin-path`: the host spawns and supervises the plugin.
 *    The path is the executable itself, or a directory holding
 *    `ccm-provider-<cloud-provider>` (an executable) or
 *    `ccm-provider-<cloud-provider>.js` (run with this Node.js);
 *  - socket mode, `--plugin-endpoint=unix:///abs/path.sock`: the plugin runs
 *    elsewhere (e.g. a sidecar) and the host only connects;
 *  - `--cloud-provider=local` with neither flag: the built-in local plugin
 *    shipped in this repository's dist/ is spawned.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fsErrorReason, type Problems } from './validate.js';

/** How to reach the plugin. Paths are absolute. */
export type PluginSource =
  | {
      kind: 'exec';
      /** Which rule chose the file. */
      origin: 'plugin-path' | 'builtin-local';
      /** The plugin file (an executable or a JavaScript entry point). */
      file: string;
      /** What to spawn: `file` itself, or this Node.js binary for JavaScript files. */
      command: string;
      args: readonly string[];
    }
  | {
      kind: 'endpoint';
      /** As given, e.g. `unix:///run/ccm/provider.sock`. */
      endpoint: string;
      /** The socket's file system path. */
      socketPath: string;
    };

/** `--cloud-provider` value that may use the built-in plugin. */
const LOCAL_CLOUD_PROVIDER = 'local';

/** Directory holding this repository's build output (dist/), found from this file's location. */
function distDir(): string {
  const up3 = path.resolve(fileURLToPath(import.meta.url), '../../..'); // dist/host/config/x.js → dist
  return path.basename(up3) === 'dist' ? up3 : path.join(up3, 'dist'); // running from sources
}

/** The built-in local plugin: `<repo>/dist/plugins/local/main.js`. */
export const BUILTIN_LOCAL_PLUGIN_PATH = path.join(distDir(), 'plugins', 'local', 'main.js');

/** File names looked up in a `--plugin-path` directory, in order. */
function pluginFileNames(cloudProvider: string): [string, string] {
  const base = `ccm-provider-${cloudProvider}`;
  return [base, `${base}.js`];
}

/** Inputs of resolvePluginSource. */
export interface PluginInputs {
  /** The validated `--cloud-provider`, or undefined when it is missing or invalid. */
  cloudProvider: string | undefined;
  pluginPath: string | undefined;
  pluginEndpoint: string | undefined;
  /** Overrides BUILTIN_LOCAL_PLUGIN_PATH (tests). */
  localPluginPath?: string;
}

/** Picks the plugin source, recording every problem; undefined when there is one. */
export function resolvePluginSource(inputs: PluginInputs, problems: Problems): PluginSource | undefined {
  const { cloudProvider, pluginPath, pluginEndpoint } = inputs;
  if (pluginPath !== undefined && pluginEndpoint !== undefined) {
    problems.add(
      '--plugin-path and --plugin-endpoint are mutually exclusive: pass --plugin-path to spawn the plugin, or --plugin-endpoint to connect to one that is already running',
    );
    return undefined;
  }
  if (pluginEndpoint !== undefined) return endpointSource(pluginEndpoint, problems);
  if (pluginPath !== undefined) return pathSource(pluginPath, cloudProvider, problems);
  if (cloudProvider === LOCAL_CLOUD_PROVIDER) {
    const file = inputs.localPluginPath ?? BUILTIN_LOCAL_PLUGIN_PATH;
    if (!fs.existsSync(file)) {
      problems.add(
        `--cloud-provider=local without --plugin-path uses the built-in plugin ${file}, which does not exist: run "npm run build", or pass --plugin-path or --plugin-endpoint`,
      );
      return undefined;
    }
    return execSource(file, 'builtin-local', problems);
  }
  if (cloudProvider !== undefined) {
    const [exe] = pluginFileNames(cloudProvider);
    problems.add(
      `one of --plugin-path or --plugin-endpoint is required: pass --plugin-path=DIR (holding ${exe}) or --plugin-endpoint=unix:///path/to/provider.sock`,
    );
  }
  return undefined;
}

function endpointSource(endpoint: string, problems: Problems): PluginSource | undefined {
  const prefix = 'unix://';
  const socketPath = endpoint.startsWith(prefix) ? endpoint.slice(prefix.length) : '';
  if (!path.isAbsolute(socketPath)) {
    problems.add(
      `--plugin-endpoint=${JSON.stringify(endpoint)} is invalid: use unix:// followed by an absolute socket path, e.g. unix:///run/ccm/provider.sock`,
    );
    return undefined;
  }
  return { kind: 'endpoint', endpoint, socketPath: path.normalize(socketPath) };
}

function pathSource(given: string, cloudProvider: string | undefined, problems: Problems): PluginSource | undefined {
  const abs = path.resolve(given);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(abs);
  } catch (err) {
    problems.add(`--plugin-path ${given}: ${fsErrorReason(err)}: pass the plugin executable or the directory that holds it`);
    return undefined;
  }
  if (!stat.isDirectory()) return execSource(abs, 'plugin-path', problems);
  if (cloudProvider === undefined) return undefined; // cannot name the file; --cloud-provider is already reported
  const names = pluginFileNames(cloudProvider);
  let found: string | undefined;
  for (const file of names.map((n) => path.join(abs, n))) {
    try {
      fs.statSync(file);
      found = file;
      break;
    } catch (err) {
      // Only "not there" means try the next name; anything else (a directory the host may not search) is the answer.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      problems.add(
        `--plugin-path ${given}: cannot look up ${path.basename(file)}: ${fsErrorReason(err)}: give the host's user read and search permission (r-x) on the directory`,
      );
      return undefined;
    }
  }
  if (found === undefined) {
    problems.add(`--plugin-path ${given} holds neither ${names[0]} nor ${names[1]}: install the plugin there, or pass the plugin file itself`);
    return undefined;
  }
  return execSource(found, 'plugin-path', problems);
}

/** JavaScript entry points run with this Node.js; anything else must be executable. */
function execSource(file: string, origin: 'plugin-path' | 'builtin-local', problems: Problems): PluginSource | undefined {
  if (/\.[cm]?js$/.test(file)) {
    try {
      fs.accessSync(file, fs.constants.R_OK);
    } catch (err) {
      problems.add(`--plugin-path ${file} cannot be read: ${fsErrorReason(err)}: fix its permissions`);
      return undefined;
    }
    return { kind: 'exec', origin, file, command: process.execPath, args: [file] };
  }
  try {
    if (!fs.statSync(file).isFile()) throw Object.assign(new Error('not a regular file'), { code: 'NOTFILE' });
    fs.accessSync(file, fs.constants.X_OK);
  } catch (err) {
    problems.add(`--plugin-path ${file} is not executable (${fsErrorReason(err)}): run chmod +x on it, or pass a .js entry point`);
    return undefined;
  }
  return { kind: 'exec', origin, file, command: file, args: [] };
}
