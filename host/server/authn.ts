/**
 * Delegated authentication of requests to the host's HTTPS servers, as
 * k8s.io/apiserver's DelegatingAuthenticator does, tried in this order:
 *
 *  1. request header: a client certificate signed by the request-header CA
 *     (and, when allowed names are set, with one of those common names)
 *     makes the identity headers trusted; the user is the first username
 *     header set (none: the next method is tried);
 *  2. client certificate signed by the client CA: the user is its common
 *     name, the groups its organizations;
 *  3. bearer token: reviewed by the API server (TokenReview), answers
 *     cached for the cache TTL, bounded in number.
 *
 * A request that presents credentials none of them accepts is refused (401),
 * as upstream; one without credentials is anonymous (when allowed).
 * Authenticated users get the group system:authenticated.
 */
import { createHash, X509Certificate } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { PeerCertificate, TLSSocket } from 'node:tls';
import { errorMessage } from '../log.js';
import { TtlCache } from './ttl-cache.js';

/** Who made a request (authentication/v1 UserInfo). */
export interface UserInfo {
  readonly name: string;
  readonly uid?: string;
  readonly groups: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

export const ANONYMOUS: UserInfo = { name: 'system:anonymous', groups: ['system:unauthenticated'] };
const AUTHENTICATED_GROUP = 'system:authenticated';

/** Outcome: a user, anonymous (no credentials), or a refusal (401) with the reasons for the log. */
export type AuthnResult = { user: UserInfo } | { anonymous: true } | { refused: string };

/** Reviews a bearer token: the user, or undefined when the API server does not accept it. Throws when it cannot ask. */
export type TokenReviewer = (token: string) => Promise<UserInfo | undefined>;

/** Trust for request-header authentication (front proxies). */
export interface RequestHeaderTrust {
  readonly ca: readonly X509Certificate[];
  readonly allowedNames: readonly string[];
  readonly usernameHeaders: readonly string[];
  readonly uidHeaders: readonly string[];
  readonly groupHeaders: readonly string[];
  readonly extraHeaderPrefixes: readonly string[];
}

/** The certificate authorities (and front-proxy settings) an Authenticator trusts. */
export interface ClientTrust {
  readonly clientCa?: readonly X509Certificate[];
  readonly requestHeader?: RequestHeaderTrust;
}

/** What an Authenticator trusts and whom it asks. */
export interface AuthenticatorOptions {
  trust: ClientTrust;
  reviewToken?: TokenReviewer;
  /** How long TokenReview answers (accepted or not) are kept. */
  tokenCacheTtlMs: number;
}

/** Most TokenReview answers kept at once. */
const TOKEN_CACHE_ENTRIES = 4096;
/** Longest bearer token reviewed (service account tokens are ~1 KB). */
const MAX_TOKEN_BYTES = 16 * 1024;

export class Authenticator {
  private readonly tokens = new TtlCache<UserInfo | null>(TOKEN_CACHE_ENTRIES);
  private trust: ClientTrust;

  constructor(private readonly o: AuthenticatorOptions) {
    this.trust = o.trust;
  }

  /** CA certificates the TLS server should ask client certificates for (both bundles). */
  get clientCas(): readonly X509Certificate[] {
    return [...(this.trust.requestHeader?.ca ?? []), ...(this.trust.clientCa ?? [])];
  }

  /** Replaces the trusted CAs (a rotated CA file or ConfigMap); requests from now on are checked against these. */
  setTrust(trust: ClientTrust): void {
    this.trust = trust;
  }

  async authenticate(req: IncomingMessage): Promise<AuthnResult> {
    const refusals: string[] = [];
    const chain = peerChain(req);
    if (chain.length > 0) {
      const socket = req.socket as TLSSocket;
      if (!socket.authorized) {
        refusals.push(`client certificate not trusted: ${String(socket.authorizationError)}`);
      } else {
        const { requestHeader: rh, clientCa } = this.trust;
        if (rh && signedBy(chain, rh.ca)) {
          const cn = commonName(chain[0]!);
          if (rh.allowedNames.length > 0 && !rh.allowedNames.includes(cn)) {
            refusals.push(`request-header client certificate ${JSON.stringify(cn)} is not in --requestheader-allowed-names`);
          } else {
            const user = fromHeaders(req, rh);
            if (user) return { user: withAuthenticated(user) };
          }
        }
        if (clientCa && signedBy(chain, clientCa)) {
          return { user: withAuthenticated({ name: commonName(chain[0]!), groups: organizations(chain[0]!) }) };
        }
        refusals.push('client certificate not signed by the client CA (--client-ca-file)');
      }
    }
    const token = bearerToken(req);
    if (token !== undefined) {
      const user = await this.review(token).catch((err: unknown) => {
        refusals.push(`token review failed: ${errorMessage(err)}`);
        return undefined;
      });
      if (user) return { user: withAuthenticated(user) };
      if (refusals.length === 0) refusals.push('invalid bearer token');
    }
    return refusals.length > 0 ? { refused: refusals.join('; ') } : { anonymous: true };
  }

  private async review(token: string): Promise<UserInfo | undefined> {
    if (!this.o.reviewToken) throw new Error('no API server to review tokens with');
    if (Buffer.byteLength(token) > MAX_TOKEN_BYTES) return undefined;
    const key = createHash('sha256').update(token).digest('base64');
    const cached = this.tokens.get(key);
    if (cached !== undefined) return cached ?? undefined;
    const user = await this.o.reviewToken(token);
    this.tokens.set(key, user ?? null, this.o.tokenCacheTtlMs);
    return user;
  }
}

function withAuthenticated(user: UserInfo): UserInfo {
  return user.groups.includes(AUTHENTICATED_GROUP) ? user : { ...user, groups: [...user.groups, AUTHENTICATED_GROUP] };
}

function bearerToken(req: IncomingMessage): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  return m?.[1];
}

/** The client's certificate chain, leaf first (with the trust anchor when the TLS layer found it); empty without one. */
function peerChain(req: IncomingMessage): X509Certificate[] {
  const socket = req.socket as Partial<TLSSocket>;
  if (typeof socket.getPeerCertificate !== 'function') return [];
  const chain: X509Certificate[] = [];
  const seen = new Set<string>();
  let c: PeerCertificate | undefined = socket.getPeerCertificate(true) as PeerCertificate;
  while (c?.raw && !seen.has(c.fingerprint256) && chain.length < 10) {
    seen.add(c.fingerprint256);
    chain.push(new X509Certificate(c.raw));
    c = (c as { issuerCertificate?: PeerCertificate }).issuerCertificate;
  }
  return chain;
}

/** Whether `bundle` anchors `chain`: one of its certificates is in the chain or issued a certificate of it. */
function signedBy(chain: readonly X509Certificate[], bundle: readonly X509Certificate[]): boolean {
  return chain.some((c) => bundle.some((ca) => ca.fingerprint256 === c.fingerprint256 || (c.checkIssued(ca) && c.verify(ca.publicKey))));
}

/** Values of one attribute (CN, O) of a certificate's subject. */
function subjectValues(cert: X509Certificate, attr: string): string[] {
  return cert.subject
    .split('\n')
    .filter((line) => line.startsWith(`${attr}=`))
    .map((line) => line.slice(attr.length + 1));
}

function commonName(cert: X509Certificate): string {
  return subjectValues(cert, 'CN')[0] ?? '';
}

function organizations(cert: X509Certificate): string[] {
  return subjectValues(cert, 'O');
}

/** The user the front proxy's headers name, or undefined when no username header is set. */
function fromHeaders(req: IncomingMessage, rh: RequestHeaderTrust): UserInfo | undefined {
  const values = (name: string) => (req.headersDistinct[name] ?? []).filter((v) => v !== '');
  const name = rh.usernameHeaders.map((h) => values(h)[0]).find((v) => v !== undefined);
  if (name === undefined) return undefined;
  const uid = rh.uidHeaders.map((h) => values(h)[0]).find((v) => v !== undefined);
  const groups = rh.groupHeaders.flatMap(values);
  const extra: Record<string, string[]> = {};
  for (const [header, vals] of Object.entries(req.headersDistinct)) {
    const prefix = rh.extraHeaderPrefixes.find((p) => header.startsWith(p));
    if (prefix === undefined || vals === undefined) continue;
    const key = safeUnescape(header.slice(prefix.length));
    (extra[key] ??= []).push(...vals);
  }
  return { name, ...(uid !== undefined ? { uid } : {}), groups, ...(Object.keys(extra).length > 0 ? { extra } : {}) };
}

/** Extra keys are percent-encoded in header names (upstream). */
function safeUnescape(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The certificates of a PEM bundle; throws naming `what` when there are none or one is invalid. */
export function parseCaBundle(pem: string, what: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new Error(`${what} holds no PEM certificate`);
  try {
    return blocks.map((b) => new X509Certificate(b));
  } catch (err) {
    throw new Error(`${what} holds an invalid certificate: ${errorMessage(err)}`, { cause: err });
  }
}
