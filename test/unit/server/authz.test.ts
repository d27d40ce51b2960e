/**
 * The delegated authorizer without an API server: always-allowed groups and
 * paths (upstream's exact-or-trailing-* matching, leading / optional), the
 * SubjectAccessReview stand-in asked otherwise, its answers cached per user,
 * path and verb, and the verb of each HTTP method.
 */
import test from 'ava';
import { ANONYMOUS, type UserInfo } from '../../../host/server/authn.js';
import { Authorizer, verbOf, type AccessReviewer } from '../../../host/server/authz.js';

const ALICE: UserInfo = { name: 'alice', groups: ['system:authenticated'] };
const ADMIN: UserInfo = { name: 'root', groups: ['system:masters', 'system:authenticated'] };

function authorizer(paths: string[], review?: AccessReviewer) {
  return new Authorizer({ alwaysAllowPaths: paths, review, allowCacheTtlMs: 60_000, denyCacheTtlMs: 60_000 });
}

const PATH_CASES: { paths: string[]; path: string; allowed: boolean }[] = [
  { paths: ['/healthz', '/readyz', '/livez'], path: '/healthz', allowed: true },
  { paths: ['/healthz', '/readyz', '/livez'], path: '/healthz/ping', allowed: false },
  { paths: ['/healthz', '/readyz', '/livez'], path: '/metrics', allowed: false },
  { paths: ['healthz'], path: '/healthz', allowed: true },
  { paths: ['/healthz/*'], path: '/healthz/ping', allowed: true },
  { paths: ['/healthz/*'], path: '/healthz', allowed: false },
  { paths: ['/healthz*'], path: '/healthz', allowed: true },
  { paths: ['/'], path: '/', allowed: true },
  { paths: ['/'], path: '/metrics', allowed: false },
  { paths: [], path: '/healthz', allowed: false },
];

for (const c of PATH_CASES) {
  test(`always-allow ${JSON.stringify(c.paths)}: ${c.path} is ${c.allowed ? 'allowed' : 'not allowed'} to anonymous`, async (t) => {
    t.is((await authorizer(c.paths).authorize(ANONYMOUS, c.path, 'get')).allowed, c.allowed);
  });
}

test('system:masters is allowed without a review', async (t) => {
  const a = authorizer([], () => Promise.reject(new Error('must not be asked')));
  t.true((await a.authorize(ADMIN, '/metrics', 'get')).allowed);
});

test("other decisions are the reviewer's, cached per user, path and verb", async (t) => {
  const asked: string[] = [];
  const a = authorizer(['/healthz'], async (user, path, verb) => {
    asked.push(`${user.name} ${verb} ${path}`);
    return user.name === 'alice' && path === '/metrics' && verb === 'get' ? { allowed: true } : { allowed: false, reason: 'no RBAC rule' };
  });
  t.deepEqual(await a.authorize(ALICE, '/metrics', 'get'), { allowed: true });
  t.deepEqual(await a.authorize(ALICE, '/metrics', 'get'), { allowed: true });
  t.deepEqual(await a.authorize(ANONYMOUS, '/metrics', 'get'), { allowed: false, reason: 'no RBAC rule' });
  t.deepEqual(await a.authorize(ANONYMOUS, '/metrics', 'get'), { allowed: false, reason: 'no RBAC rule' });
  t.deepEqual(await a.authorize(ALICE, '/metrics', 'create'), { allowed: false, reason: 'no RBAC rule' });
  t.deepEqual(asked, ['alice get /metrics', 'system:anonymous get /metrics', 'alice create /metrics']);
});

test('a review that fails is not cached: the next request asks again', async (t) => {
  let calls = 0;
  const a = authorizer([], async () => {
    calls++;
    if (calls === 1) throw new Error('API server unavailable');
    return { allowed: true };
  });
  await t.throwsAsync(a.authorize(ALICE, '/metrics', 'get'), { message: /unavailable/ });
  t.true((await a.authorize(ALICE, '/metrics', 'get')).allowed);
});

test('without a reviewer only the always-allowed are allowed', async (t) => {
  t.false((await authorizer([]).authorize(ALICE, '/metrics', 'get')).allowed);
});

test("HTTP methods map to upstream's verbs", (t) => {
  t.deepEqual(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'].map(verbOf), ['get', 'get', 'create', 'update', 'patch', 'delete']);
});
