/**
 * Delegated authorization of requests to the host's HTTPS servers, as
 * k8s.io/apiserver's DelegatingAuthorizationOptions: members of
 * system:masters are allowed, then the always-allowed paths (exact, or a
 * prefix ending in `*`; a leading `/` optional), then the API server decides
 * (SubjectAccessReview of the non-resource path and verb), its answers cached
 * (allowed and denied each for their TTL), bounded in number.
 */
import type { UserInfo } from './authn.js';
import { TtlCache } from './ttl-cache.js';

/** A decision; `reason` is the API server's, when it gave one. */
export interface AuthzDecision {
  allowed: boolean;
  reason?: string;
}

/** Asks the API server whether `user` may `verb` the non-resource `path`. Throws when it cannot ask. */
export type AccessReviewer = (user: UserInfo, path: string, verb: string) => Promise<AuthzDecision>;

export interface AuthorizerOptions {
  alwaysAllowPaths: readonly string[];
  /** Default system:masters (upstream). */
  alwaysAllowGroups?: readonly string[];
  /** Without one, only the groups and paths above are allowed. */
  review?: AccessReviewer;
  allowCacheTtlMs: number;
  denyCacheTtlMs: number;
}

/** Most SubjectAccessReview answers kept at once. */
const DECISION_CACHE_ENTRIES = 4096;

export class Authorizer {
  private readonly exact = new Set<string>();
  private readonly prefixes: string[] = [];
  private readonly groups: ReadonlySet<string>;
  private readonly decisions = new TtlCache<AuthzDecision>(DECISION_CACHE_ENTRIES);

  constructor(private readonly o: AuthorizerOptions) {
    for (const raw of o.alwaysAllowPaths) {
      const p = raw.replace(/^\//, '');
      if (p.endsWith('*')) this.prefixes.push(p.slice(0, -1));
      else this.exact.add(p);
    }
    this.groups = new Set(o.alwaysAllowGroups ?? ['system:masters']);
  }

  /** Whether `user` may `verb` `path` (a URL path without query). Throws when the API server cannot be asked. */
  async authorize(user: UserInfo, path: string, verb: string): Promise<AuthzDecision> {
    if (user.groups.some((g) => this.groups.has(g))) return { allowed: true };
    const p = path.replace(/^\//, '');
    if (this.exact.has(p) || this.prefixes.some((prefix) => p.startsWith(prefix))) return { allowed: true };
    if (!this.o.review) return { allowed: false, reason: 'no API server to authorize with' };
    const key = JSON.stringify([user.name, user.uid, [...user.groups].sort(), user.extra, path, verb]);
    const cached = this.decisions.get(key);
    if (cached) return cached;
    const decision = await this.o.review(user, path, verb);
    this.decisions.set(key, decision, decision.allowed ? this.o.allowCacheTtlMs : this.o.denyCacheTtlMs);
    return decision;
  }
}

/** The SubjectAccessReview verb of an HTTP method on a non-resource path (upstream's request info). */
export function verbOf(method: string | undefined): string {
  switch (method) {
    case 'GET':
    case 'HEAD':
      return 'get';
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    default:
      return (method ?? '').toLowerCase();
  }
}
