/**
 * `/statusz` and `/flagz` (KEP-4827, KEP-4828; beta and on by default in
 * Kubernetes v1.36), shaped as kube-controller-manager serves them from
 * k8s.io/apiserver's statusz and flagz packages: plain text for people by
 * default (a header naming the component and a warning that the text is not
 * machine parseable; the delimiter is picked at random per response, as
 * upstream, so nobody parses it), or, when the Accept header asks for the
 * structured kind (`application/json;as=Statusz;v=v1beta1;g=config.k8s.io`,
 * v1alpha1 still answered with a deprecation Warning), a JSON object of
 * group `config.k8s.io`. Any other Accept gets 406. The secure port's guard
 * authorizes them as every other path (upstream ClusterRole
 * `system:monitoring` allows both). Pure functions: the server routes to them.
 */
import { randomInt } from 'node:crypto';

/** What one response is. */
export interface ZpageResponse {
  status: number;
  contentType: string;
  body: string;
  /** Extra headers (a Warning for a deprecated version). */
  headers?: Record<string, string>;
}

/** What /statusz reports. */
export interface StatuszInfo {
  component: string;
  startTime: Date;
  /** The host's version (upstream: the Kubernetes binary's). */
  binaryVersion: string;
  /** The Kubernetes minor the host targets, `1.34` (upstream: the emulated version). */
  emulationVersion: string;
  /** The runtime's version; upstream's field is the Go version, here Node.js's. */
  runtimeVersion: string;
  /** Top-level paths served, e.g. /healthz. */
  paths: readonly string[];
  now?: Date;
}

const GROUP = 'config.k8s.io';
const VERSIONS = ['v1beta1', 'v1alpha1'];
const DEPRECATED = new Set(['v1alpha1']);
/** Upstream's delimiters, one picked per response. */
const DELIMITERS = [':', ': ', '=', ' '];

const header = (component: string, page: string) =>
  `\n${component} ${page}\nWarning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only.\n`;

/** The /statusz answer for an Accept header. */
export function statuszResponse(accept: string | undefined, info: StatuszInfo): ZpageResponse {
  const now = info.now ?? new Date();
  const upSeconds = Math.max(0, Math.floor((now.getTime() - info.startTime.getTime()) / 1000));
  const paths = [...new Set(info.paths.map((p) => `/${p.split('/')[1] ?? ''}`).filter((p) => p !== '/'))].sort();
  return negotiate(accept, 'Statusz', {
    text: () => {
      const d = DELIMITERS[randomInt(DELIMITERS.length)]!;
      const up = `${Math.floor(upSeconds / 3600)} hr ${String(Math.floor(upSeconds / 60) % 60).padStart(2, '0')} min ${String(upSeconds % 60).padStart(2, '0')} sec`;
      return (
        header(info.component, 'statusz') +
        `\nStarted${d} ${info.startTime.toUTCString()}\nUp${d} ${up}\nRuntime version${d} ${info.runtimeVersion}\nBinary version${d} ${info.binaryVersion}\n` +
        `Emulation version${d} ${info.emulationVersion}\nPaths${d} ${paths.join(' ')}\n`
      );
    },
    object: (apiVersion) => ({
      kind: 'Statusz',
      apiVersion,
      metadata: { name: info.component },
      startTime: info.startTime.toISOString().replace(/\.\d{3}Z$/, 'Z'),
      uptimeSeconds: upSeconds,
      // Upstream's goVersion: the runtime that runs the binary.
      goVersion: info.runtimeVersion,
      binaryVersion: info.binaryVersion,
      emulationVersion: info.emulationVersion,
      paths,
    }),
  });
}

/** The /flagz answer: every flag's effective value (secrets as CLASSIFIED, by the caller). */
export function flagzResponse(accept: string | undefined, component: string, flags: Readonly<Record<string, string>>): ZpageResponse {
  const names = Object.keys(flags).sort();
  return negotiate(accept, 'Flagz', {
    text: () => {
      const d = DELIMITERS[randomInt(DELIMITERS.length)]!;
      return header(component, 'flagz') + names.map((n) => `${n}${d}${flags[n]}\n`).join('');
    },
    object: (apiVersion) => ({
      kind: 'Flagz',
      apiVersion,
      metadata: { name: component },
      flags: Object.fromEntries(names.map((n) => [n, flags[n]])),
    }),
  });
}

interface Renderers {
  text: () => string;
  object: (apiVersion: string) => object;
}

/** One media range of an Accept header. */
interface MediaRange {
  type: string;
  params: Record<string, string>;
  q: number;
}

function parseAccept(accept: string): MediaRange[] {
  return accept
    .split(',')
    .map((part) => {
      const [type = '', ...rest] = part.split(';').map((s) => s.trim());
      const params: Record<string, string> = {};
      for (const p of rest) {
        const eq = p.indexOf('=');
        if (eq > 0) params[p.slice(0, eq).trim().toLowerCase()] = p.slice(eq + 1).trim();
      }
      const q = params.q === undefined ? 1 : Number(params.q);
      return { type: type.toLowerCase(), params, q: Number.isFinite(q) ? q : 0 };
    })
    .filter((r) => r.type !== '' && r.q > 0)
    .sort((a, b) => b.q - a.q); // stable: equal q keeps the client's order
}

/**
 * Upstream's restrictions: text/plain (or a wildcard) gets the text; JSON
 * only as the structured kind (as=, g=, v= naming a known version); anything
 * else is 406, naming what is accepted.
 */
function negotiate(accept: string | undefined, kind: 'Statusz' | 'Flagz', r: Renderers): ZpageResponse {
  const text = (): ZpageResponse => ({ status: 200, contentType: 'text/plain; charset=utf-8', body: r.text() });
  if (accept === undefined || accept.trim() === '') return text();
  for (const m of parseAccept(accept)) {
    if (m.type === 'text/plain' || m.type === 'text/*' || m.type === '*/*') {
      if (m.params.as === undefined) return text();
      continue;
    }
    if (m.type === 'application/json' && m.params.as === kind && m.params.g === GROUP && VERSIONS.includes(m.params.v ?? '')) {
      const v = m.params.v!;
      return {
        status: 200,
        contentType: `application/json;as=${kind};g=${GROUP};v=${v}`,
        body: `${JSON.stringify(r.object(`${GROUP}/${v}`), null, 2)}\n`,
        ...(DEPRECATED.has(v)
          ? { headers: { Warning: `299 - "This version of the ${kind.toLowerCase()} endpoint is deprecated. Please use a newer version."` } }
          : {}),
      };
    }
  }
  return {
    status: 406,
    contentType: 'text/plain; charset=utf-8',
    body: `406 Not Acceptable: only text/plain and application/json;as=${kind};v=v1beta1;g=${GROUP} are served\n`,
  };
}
