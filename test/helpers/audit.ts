/**
 * kube-apiserver's audit log, as tests read it (one JSON event per line; the
 * control plane logs writes to Services, claims, PVs and Nodes, see
 * ControlPlane's AUDIT_POLICY). Replicas that run as the same ServiceAccount
 * with different tokens are told apart by the token's credential id
 * (`user.extra["authentication.kubernetes.io/credential-id"]`, `JTI=<jti>`).
 */
import { open, stat } from 'node:fs/promises';

/** The fields of an audit event the tests use. */
export interface AuditEvent {
  stage: string;
  verb: string;
  requestURI: string;
  user: { username: string; extra?: Record<string, string[]> };
  userAgent?: string;
  objectRef?: { resource?: string; namespace?: string; name?: string; subresource?: string };
  responseStatus?: { code?: number };
  /** RFC 3339 with microseconds, UTC: compares as text. */
  requestReceivedTimestamp: string;
}

const CREDENTIAL_ID = 'authentication.kubernetes.io/credential-id';

/** The credential id the API server records for requests made with ServiceAccount token `token`. */
export function tokenCredentialId(token: string): string {
  const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { jti?: string };
  if (!payload.jti) throw new Error('the token has no jti claim');
  return `JTI=${payload.jti}`;
}

/** The credential id an audit event was made with ('' if none). */
export function credentialIdOf(e: AuditEvent): string {
  return e.user.extra?.[CREDENTIAL_ID]?.[0] ?? '';
}

/**
 * The audit log from its size now on: `events()` returns the completed
 * requests logged since (stage ResponseComplete or Panic). A rotation in
 * between (the suite's log is capped) makes it read the new file from its start.
 */
export async function auditLogFromNow(path: string): Promise<{ events(): Promise<AuditEvent[]> }> {
  let offset = (await stat(path)).size;
  return {
    async events() {
      const size = (await stat(path)).size;
      if (size < offset) offset = 0;
      const f = await open(path, 'r');
      try {
        const buf = Buffer.alloc(size - offset);
        const { bytesRead } = await f.read(buf, 0, buf.length, offset);
        const text = buf.subarray(0, bytesRead).toString('utf8');
        // The last line may still be being written.
        return text
          .split('\n')
          .slice(0, -1)
          .filter((l) => l.trim() !== '')
          .map((l) => JSON.parse(l) as AuditEvent)
          .filter((e) => e.stage === 'ResponseComplete' || e.stage === 'Panic');
      } finally {
        await f.close();
      }
    },
  };
}
