/**
 * Flags of secure serving on `--secure-port` (upstream's "secure serving",
 * "authentication" and "authorization" flag sets of k8s.io/apiserver),
 * compiled into `HostConfig.serving`. Semantics are upstream's; see
 * host/server/ for what each setting does at run time.
 */
import path from 'node:path';
import tls, { type SecureVersion } from 'node:tls';
import type { HostOptionsWithDefaults } from './options.js';
import type { Problems } from './validate.js';

/** Certificate and key the server serves HTTPS with. Absolute paths. */
export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
}

/** `--requestheader-*`: trusting a front proxy's identity headers. */
export interface RequestHeaderConfig {
  /** `--requestheader-client-ca-file`; undefined = look it up in the cluster (unless skipLookup). */
  readonly clientCaFile: string | undefined;
  readonly allowedNames: readonly string[];
  readonly usernameHeaders: readonly string[];
  readonly uidHeaders: readonly string[];
  readonly groupHeaders: readonly string[];
  readonly extraHeaderPrefixes: readonly string[];
}

/** The validated secure-serving settings. */
export interface ServingConfig {
  /** `--tls-cert-file` and `--tls-private-key-file`; undefined = a self-signed certificate (see certDir). */
  readonly tls: TlsFiles | undefined;
  /** `--cert-dir`: where a generated certificate is written and reused from; '' = memory only (upstream CCM). */
  readonly certDir: string;
  /** `--tls-min-version`, as Node names it; undefined = Node's default (TLS 1.2). */
  readonly tlsMinVersion: SecureVersion | undefined;
  /** `--tls-cipher-suites` as an OpenSSL cipher list; undefined = Node's defaults. */
  readonly tlsCiphers: string | undefined;
  /** `--tls-curve-preferences` as an OpenSSL group list (Node's `ecdhCurve`); undefined = Node's defaults. */
  readonly tlsCurves: string | undefined;
  readonly authentication: {
    /** `--authentication-kubeconfig`; undefined = in-cluster, else the host's own connection. */
    readonly kubeconfig: string | undefined;
    readonly skipLookup: boolean;
    readonly tolerateLookupFailure: boolean;
    /** `--authentication-token-webhook-cache-ttl`. */
    readonly tokenCacheTtlMs: number;
    /** `--client-ca-file`; undefined = the cluster's, looked up (unless skipLookup). */
    readonly clientCaFile: string | undefined;
    readonly requestHeader: RequestHeaderConfig;
  };
  readonly authorization: {
    /** `--authorization-kubeconfig`; undefined = in-cluster, else the host's own connection. */
    readonly kubeconfig: string | undefined;
    /** `--authorization-always-allow-paths`: exact paths, or prefixes ending in `*`. */
    readonly alwaysAllowPaths: readonly string[];
    readonly allowCacheTtlMs: number;
    readonly denyCacheTtlMs: number;
  };
}

/** Go's crypto/tls version names (what upstream's --tls-min-version takes) → Node's. */
const TLS_VERSIONS: Readonly<Record<string, SecureVersion>> = {
  VersionTLS10: 'TLSv1',
  VersionTLS11: 'TLSv1.1',
  VersionTLS12: 'TLSv1.2',
  VersionTLS13: 'TLSv1.3',
};

/** Go's cipher suite names (IANA) → OpenSSL's, for the suites Go's --tls-cipher-suites accepts. */
const CIPHER_SUITES: Readonly<Record<string, string>> = {
  TLS_RSA_WITH_3DES_EDE_CBC_SHA: 'DES-CBC3-SHA',
  TLS_RSA_WITH_AES_128_CBC_SHA: 'AES128-SHA',
  TLS_RSA_WITH_AES_256_CBC_SHA: 'AES256-SHA',
  TLS_RSA_WITH_AES_128_CBC_SHA256: 'AES128-SHA256',
  TLS_RSA_WITH_AES_128_GCM_SHA256: 'AES128-GCM-SHA256',
  TLS_RSA_WITH_AES_256_GCM_SHA384: 'AES256-GCM-SHA384',
  TLS_RSA_WITH_RC4_128_SHA: 'RC4-SHA',
  TLS_ECDHE_ECDSA_WITH_RC4_128_SHA: 'ECDHE-ECDSA-RC4-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: 'ECDHE-ECDSA-AES128-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_RC4_128_SHA: 'ECDHE-RSA-RC4-SHA',
  TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA: 'ECDHE-RSA-DES-CBC3-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: 'ECDHE-RSA-AES128-SHA256',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
};

/**
 * TLS 1.3 suites: Go accepts their names but always enables all three (they
 * are not configurable there), so they are always appended here too.
 */
const TLS13_SUITES = ['TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256'];

export function compileServingConfig(o: HostOptionsWithDefaults, p: Problems): ServingConfig {
  const file = (flag: string, value: string | undefined) => {
    if (value === undefined || value === '') return undefined;
    p.readableFile(flag, value);
    return path.resolve(value);
  };
  return {
    tls: checkTls(o.tlsCertFile, o.tlsPrivateKeyFile, p),
    certDir: o.certDir ? path.resolve(o.certDir) : '',
    tlsMinVersion: tlsMinVersion('tls-min-version', o.tlsMinVersion, p),
    tlsCiphers: tlsCiphers('tls-cipher-suites', o.tlsCipherSuites, p),
    tlsCurves: tlsCurves('tls-curve-preferences', o.tlsCurvePreferences, p),
    authentication: {
      kubeconfig: file('authentication-kubeconfig', o.authenticationKubeconfig),
      skipLookup: p.bool('authentication-skip-lookup', o.authenticationSkipLookup),
      tolerateLookupFailure: p.bool('authentication-tolerate-lookup-failure', o.authenticationTolerateLookupFailure),
      tokenCacheTtlMs: p.duration('authentication-token-webhook-cache-ttl', o.authenticationTokenWebhookCacheTtl),
      clientCaFile: file('client-ca-file', o.clientCaFile),
      requestHeader: {
        clientCaFile: file('requestheader-client-ca-file', o.requestheaderClientCaFile),
        allowedNames: Object.freeze([...(o.requestheaderAllowedNames ?? [])]),
        usernameHeaders: headers('requestheader-username-headers', o.requestheaderUsernameHeaders, p),
        uidHeaders: headers('requestheader-uid-headers', o.requestheaderUidHeaders ?? [], p),
        groupHeaders: headers('requestheader-group-headers', o.requestheaderGroupHeaders, p),
        extraHeaderPrefixes: headers('requestheader-extra-headers-prefix', o.requestheaderExtraHeadersPrefix, p),
      },
    },
    authorization: {
      kubeconfig: file('authorization-kubeconfig', o.authorizationKubeconfig),
      alwaysAllowPaths: allowPaths(o.authorizationAlwaysAllowPaths, p),
      allowCacheTtlMs: p.duration('authorization-webhook-cache-authorized-ttl', o.authorizationWebhookCacheAuthorizedTtl),
      denyCacheTtlMs: p.duration('authorization-webhook-cache-unauthorized-ttl', o.authorizationWebhookCacheUnauthorizedTtl),
    },
  };
}

function checkTls(certFile: string | undefined, keyFile: string | undefined, p: Problems): TlsFiles | undefined {
  if (certFile === undefined && keyFile === undefined) return undefined;
  if (certFile === undefined || keyFile === undefined) {
    const [given, missing] = certFile === undefined ? ['tls-private-key-file', 'tls-cert-file'] : ['tls-cert-file', 'tls-private-key-file'];
    p.add(`--${given} needs --${missing}: pass both, or neither for a self-signed certificate (written to --cert-dir when given)`);
    return undefined;
  }
  p.readableFile('tls-cert-file', certFile);
  p.readableFile('tls-private-key-file', keyFile);
  return { certFile: path.resolve(certFile), keyFile: path.resolve(keyFile) };
}

/** `--tls-min-version` and `--webhook-tls-min-version`: Go's version name → Node's; undefined when unset or invalid (a problem is added). */
export function tlsMinVersion(flag: string, text: string | undefined, p: Problems): SecureVersion | undefined {
  if (text === undefined || text === '') return undefined;
  const v = TLS_VERSIONS[text];
  if (v === undefined) p.add(`--${flag}=${JSON.stringify(text)} is invalid: use one of ${Object.keys(TLS_VERSIONS).join(', ')}`);
  return v;
}

/** `--tls-cipher-suites` and `--webhook-tls-cipher-suites`: Go's names → an OpenSSL cipher list; undefined when unset or invalid. */
export function tlsCiphers(flag: string, names: readonly string[] | undefined, p: Problems): string | undefined {
  if (names === undefined || names.length === 0) return undefined;
  const unknown = names.filter((n) => CIPHER_SUITES[n] === undefined && !TLS13_SUITES.includes(n));
  if (unknown.length > 0) {
    p.add(
      `--${flag}: unknown cipher suite ${unknown.map((n) => JSON.stringify(n)).join(', ')}: use Go's names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`,
    );
    return undefined;
  }
  const openssl = names.map((n) => CIPHER_SUITES[n]).filter((n): n is string => n !== undefined);
  return [...new Set([...TLS13_SUITES, ...openssl])].join(':');
}

/**
 * Go's crypto/tls CurveID numbers (what upstream's --tls-curve-preferences
 * takes, k8s.io/component-base cli/flag TLSCurvePreferences) → OpenSSL's
 * group names, which Node's `ecdhCurve` takes.
 */
const CURVES: Readonly<Record<number, string>> = {
  23: 'P-256',
  24: 'P-384',
  25: 'P-521',
  29: 'X25519',
  4587: 'SecP256r1MLKEM768',
  4588: 'X25519MLKEM768',
  4589: 'SecP384r1MLKEM1024',
};

/**
 * `--tls-curve-preferences` and `--webhook-tls-curve-preferences`: Go
 * CurveIDs → an OpenSSL group list (`ecdhCurve`); undefined when unset or
 * invalid. As upstream: each id is 1–65535, none twice, and each must be one
 * this build can use ("not supported by the current Go version" there; by
 * this Node.js's OpenSSL here, e.g. the ML-KEM hybrids before OpenSSL 3.5).
 */
export function tlsCurves(flag: string, ids: readonly string[] | undefined, p: Problems): string | undefined {
  if (ids === undefined || ids.length === 0) return undefined;
  const names: string[] = [];
  const seen = new Set<number>();
  const bad: string[] = [];
  for (const text of ids) {
    const id = /^\d+$/.test(text.trim()) ? Number(text.trim()) : NaN;
    if (!Number.isInteger(id) || id < 1 || id > 65535) bad.push(`${JSON.stringify(text)} is not a CurveID (1-65535)`);
    else if (seen.has(id)) bad.push(`${id} is given twice`);
    else if (CURVES[id] === undefined || !groupSupported(CURVES[id]))
      bad.push(`${id} is not supported by this Node.js (OpenSSL ${process.versions.openssl})`);
    else names.push(CURVES[id]);
    seen.add(id);
  }
  if (bad.length > 0) {
    const known = Object.entries(CURVES)
      .filter(([, n]) => groupSupported(n))
      .map(([id, n]) => `${id} (${n})`)
      .join(', ');
    p.add(`--${flag}: ${bad.join('; ')}: use Go's CurveID numbers, here ${known}`);
    return undefined;
  }
  return names.join(':');
}

/** Whether this Node.js's OpenSSL can offer the key exchange group `name`. */
function groupSupported(name: string): boolean {
  try {
    tls.createSecureContext({ ecdhCurve: name });
    return true;
  } catch {
    return false;
  }
}

/** One `--webhook-tls-sni-cert-key`: a certificate and key for the TLS server names given (none: the certificate's own names). */
export interface SniCertKey {
  readonly certFile: string;
  readonly keyFile: string;
  /** Names as given after `:`, lowercased; empty = the certificate's DNS names and IPs, read when serving starts. */
  readonly names: readonly string[];
}

/**
 * `cert,key[:name,...]` values (component-base's NamedCertKey syntax) →
 * SniCertKeys with absolute paths; files must be readable.
 */
export function sniCertKeys(flag: string, values: readonly string[] | undefined, p: Problems): readonly SniCertKey[] {
  const out: SniCertKey[] = [];
  for (const v of values ?? []) {
    const colon = v.indexOf(':');
    const files = (colon < 0 ? v : v.slice(0, colon)).split(',').map((f) => f.trim());
    const names =
      colon < 0
        ? []
        : v
            .slice(colon + 1)
            .split(',')
            .map((n) => n.trim().toLowerCase())
            .filter((n) => n !== '');
    if (files.length !== 2 || files.some((f) => f === '')) {
      p.add(`--${flag}=${JSON.stringify(v)} is invalid: use cert.crt,cert.key or cert.crt,cert.key:name1,*.name2`);
      continue;
    }
    p.readableFile(flag, files[0]!);
    p.readableFile(flag, files[1]!);
    out.push({ certFile: path.resolve(files[0]!), keyFile: path.resolve(files[1]!), names });
  }
  return Object.freeze(out);
}

/** HTTP header names (RFC 9110 tokens). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function headers(flag: string, values: readonly string[], p: Problems): readonly string[] {
  const bad = values.filter((v) => !HEADER_NAME.test(v));
  if (bad.length > 0) p.add(`--${flag}: ${bad.map((b) => JSON.stringify(b)).join(', ')} is not an HTTP header name`);
  return Object.freeze(values.map((v) => v.toLowerCase()));
}

function allowPaths(paths: readonly string[], p: Problems): readonly string[] {
  // Upstream (apiserver/pkg/authorization/path): a `*` only as the last character.
  const bad = paths.filter((x) => x.indexOf('*') >= 0 && x.indexOf('*') !== x.length - 1);
  if (bad.length > 0)
    p.add(`--authorization-always-allow-paths: ${bad.map((b) => JSON.stringify(b)).join(', ')} is invalid: "*" may only end a path, e.g. /healthz/*`);
  return Object.freeze([...paths]);
}
