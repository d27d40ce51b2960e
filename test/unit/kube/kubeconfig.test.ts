/**
 * The host's kubeconfig loader and request credentials against
 * client-node's KubeConfig, file by file: both must arrive at the same
 * server, TLS settings and headers.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import type https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeCredentials, type RequestAuth } from '../../../host/kube/credentials.js';
import { loadKubeConfig } from '../../../host/kube/kubeconfig.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kubeconfig-test-'));
test.after.always(() => fs.rmSync(tmp, { recursive: true, force: true }));

execFileSync(
  'openssl',
  [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    path.join(tmp, 'key.pem'),
    '-out',
    path.join(tmp, 'cert.pem'),
    '-days',
    '1',
    '-subj',
    '/CN=t',
  ],
  { stdio: 'ignore' },
);
const certB64 = fs.readFileSync(path.join(tmp, 'cert.pem')).toString('base64');
const keyB64 = fs.readFileSync(path.join(tmp, 'key.pem')).toString('base64');
// No trailing newline: client-node keeps it, client-go and the host trim it.
fs.writeFileSync(path.join(tmp, 'token'), 'file-token');

/** An exec plugin printing an ExecCredential of `apiVersion` with token `exec-token`. */
function execPlugin(apiVersion: string): string {
  const file = path.join(tmp, `plugin-${apiVersion.replace(/\W/g, '_')}.sh`);
  const cred = JSON.stringify({
    apiVersion,
    kind: 'ExecCredential',
    status: { token: 'exec-token-$GREETING', expirationTimestamp: '2999-01-01T00:00:00Z' },
  });
  fs.writeFileSync(file, `#!/bin/sh\necho '${cred}' | sed "s/\\$GREETING/$GREETING/"\n`, { mode: 0o755 });
  return file;
}

const cluster = (body: string): string => `clusters: [{ name: c, cluster: { server: "https://c.example:6443", ${body} } }]`;
const oneUser = (body: string): string =>
  `users: [{ name: u, user: { ${body} } }]\ncontexts: [{ name: x, context: { cluster: c, user: u } }]\ncurrent-context: x`;

const table: { name: string; yaml: string }[] = [
  { name: 'token, CA data', yaml: `${cluster(`certificate-authority-data: ${certB64}`)}\n${oneUser('token: abc')}` },
  {
    name: 'CA file (relative), tls-server-name',
    yaml: `${cluster('certificate-authority: cert.pem, tls-server-name: api.internal')}\n${oneUser('token: abc')}`,
  },
  { name: 'insecure-skip-tls-verify', yaml: `${cluster('insecure-skip-tls-verify: true')}\n${oneUser('token: abc')}` },
  { name: 'client certificate and key files', yaml: `${cluster('')}\n${oneUser(`client-certificate: ${tmp}/cert.pem, client-key: key.pem`)}` },
  { name: 'client certificate and key data', yaml: `${cluster('')}\n${oneUser(`client-certificate-data: ${certB64}, client-key-data: ${keyB64}`)}` },
  { name: 'username and password', yaml: `${cluster('')}\n${oneUser('username: admin, password: s3cret')}` },
  { name: 'token-file', yaml: `${cluster('')}\n${oneUser(`token-file: ${tmp}/token`)}` },
  { name: 'impersonation', yaml: `${cluster('')}\n${oneUser('token: abc, as: someone')}` },
  {
    name: 'exec plugin v1 with env',
    yaml: `${cluster('')}\n${oneUser(`exec: { apiVersion: client.authentication.k8s.io/v1, command: ${execPlugin('client.authentication.k8s.io/v1')}, env: [{ name: GREETING, value: hi }], interactiveMode: Never }`)}`,
  },
  {
    name: 'exec plugin v1beta1',
    yaml: `${cluster('')}\n${oneUser(`exec: { apiVersion: client.authentication.k8s.io/v1beta1, command: ${execPlugin('client.authentication.k8s.io/v1beta1')}, args: [] }`)}`,
  },
  {
    name: 'current-context picks the second of two',
    yaml: [
      'clusters: [{ name: a, cluster: { server: "https://a.example" } }, { name: b, cluster: { server: "https://b.example/", insecure-skip-tls-verify: true } }]',
      'users: [{ name: ua, user: { token: ta } }, { name: ub, user: { token: tb } }]',
      'contexts: [{ name: a, context: { cluster: a, user: ua } }, { name: b, context: { cluster: b, user: ub, namespace: ns } }]',
      'current-context: b',
    ].join('\n'),
  },
];

/** client-node's settings for one request, in the shape of ours. */
async function clientNodeAuth(kc: KubeConfig): Promise<{ server: string | undefined } & RequestAuth> {
  const opts: https.RequestOptions & { headers: Record<string, string> } = { headers: {} };
  await kc.applyToHTTPSOptions(opts);
  const headers = { ...opts.headers };
  if (typeof opts.auth === 'string') headers.Authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
  const tls: RequestAuth['tls'] = {};
  if (opts.ca) tls.ca = Buffer.from(opts.ca as Buffer);
  if (opts.cert) tls.cert = Buffer.from(opts.cert as Buffer);
  if (opts.key) tls.key = Buffer.from(opts.key as Buffer);
  if (opts.rejectUnauthorized !== undefined) tls.rejectUnauthorized = opts.rejectUnauthorized;
  if (opts.servername) tls.servername = opts.servername;
  return { server: kc.getCurrentCluster()?.server, tls, headers };
}

for (const { name, yaml } of table) {
  test(`kubeconfig as client-node reads it: ${name}`, async (t) => {
    const file = path.join(tmp, `${name.replace(/\W+/g, '-')}.yaml`);
    fs.writeFileSync(file, `apiVersion: v1\nkind: Config\n${yaml}\n`);
    const theirs = new KubeConfig();
    theirs.loadFromFile(file);
    const ours = new KubeCredentials(loadKubeConfig({ kubeconfig: file }));
    t.deepEqual({ server: ours.server, ...(await ours.authenticate()) }, await clientNodeAuth(theirs));
  });
}

const sameBufferTable: { name: string; yaml: string }[] = [
  {
    name: 'inline CA, certificate and key data',
    yaml: `${cluster(`certificate-authority-data: ${certB64}`)}\n${oneUser(`client-certificate-data: ${certB64}, client-key-data: ${keyB64}`)}`,
  },
  {
    name: 'CA, certificate and key files',
    yaml: `${cluster('certificate-authority: cert.pem')}\n${oneUser('client-certificate: cert.pem, client-key: key.pem')}`,
  },
];

for (const { name, yaml } of sameBufferTable) {
  // The connection pool keys its agents by these Buffers' content and remembers each Buffer's key (connections.ts).
  test(`kubeconfig: every request gets the same TLS Buffers, not new copies: ${name}`, async (t) => {
    const file = path.join(tmp, `same-${name.replace(/\W+/g, '-')}.yaml`);
    fs.writeFileSync(file, `apiVersion: v1\nkind: Config\n${yaml}\n`);
    const creds = new KubeCredentials(loadKubeConfig({ kubeconfig: file }));
    const [a, b] = [await creds.authenticate(), await creds.authenticate()];
    t.truthy(a.tls.ca);
    t.is(a.tls.ca, b.tls.ca);
    t.is(a.tls.cert, b.tls.cert);
    t.is(a.tls.key, b.tls.key);
  });
}

test('kubeconfig: auth-provider is refused, naming what to use instead', (t) => {
  const file = path.join(tmp, 'auth-provider.yaml');
  fs.writeFileSync(file, `${cluster('')}\n${oneUser('auth-provider: { name: gcp, config: {} }')}\n`);
  t.throws(() => new KubeCredentials(loadKubeConfig({ kubeconfig: file })), { message: /auth-provider "gcp".*use an exec credential plugin/ });
});

test('kubeconfig: an exec plugin that fails names itself and its stderr', async (t) => {
  const plugin = path.join(tmp, 'failing.sh');
  fs.writeFileSync(plugin, '#!/bin/sh\necho "please log in" >&2\nexit 3\n', { mode: 0o755 });
  const file = path.join(tmp, 'exec-failing.yaml');
  fs.writeFileSync(file, `${cluster('')}\n${oneUser(`exec: { apiVersion: client.authentication.k8s.io/v1, command: ${plugin} }`)}\n`);
  await t.throwsAsync(new KubeCredentials(loadKubeConfig({ kubeconfig: file })).authenticate(), {
    message: /exec credential plugin .*failing\.sh.* failed: .*please log in/,
  });
});

test('kubeconfig: an exec credential is cached until it expires', async (t) => {
  const count = path.join(tmp, 'runs');
  const plugin = path.join(tmp, 'counting.sh');
  const cred = JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: 'tok' } });
  fs.writeFileSync(plugin, `#!/bin/sh\necho run >> ${count}\necho '${cred}'\n`, { mode: 0o755 });
  const file = path.join(tmp, 'exec-counting.yaml');
  fs.writeFileSync(file, `${cluster('')}\n${oneUser(`exec: { apiVersion: client.authentication.k8s.io/v1, command: ${plugin} }`)}\n`);
  const creds = new KubeCredentials(loadKubeConfig({ kubeconfig: file }));
  const auths = await Promise.all([creds.authenticate(), creds.authenticate()]);
  await creds.authenticate();
  t.deepEqual(
    auths.map((a) => a.headers.Authorization),
    ['Bearer tok', 'Bearer tok'],
  );
  t.is(fs.readFileSync(count, 'utf8'), 'run\n');
});

test('kubeconfig: proxy-url is refused, saying what to do', (t) => {
  const file = path.join(tmp, 'proxy.yaml');
  fs.writeFileSync(file, `${cluster('proxy-url: "http://proxy:3128"')}\n${oneUser('token: abc')}\n`);
  t.throws(() => new KubeCredentials(loadKubeConfig({ kubeconfig: file })), { message: /proxy-url.*remove it/ });
});
