/** Secret tracking and redaction: logs, plugin error messages, config and env sources. */
import test from 'ava';
import { Writable } from 'node:stream';
import { createLogger, errorMessage } from '../../../host/log.js';
import { decodedToCloudError } from '../../../host/plugin/connection.js';
import {
  isSecretName,
  REDACTED,
  redact,
  redactCut,
  registerCloudConfigSecrets,
  registerEnvSecrets,
  registerSecret,
  untrackedSecrets,
} from '../../../host/redact.js';

test('registered secrets are replaced, short values are not tracked', (t) => {
  registerSecret('s3cr3t-value-one');
  registerSecret('abc');
  t.is(redact('token=s3cr3t-value-one; abc'), `token=${REDACTED}; abc`);
});

/** Realistic cloud configs: every `hidden` value must be redacted after registration, every `visible` one kept. */
const CLOUD_CONFIGS: { name: string; config: string; hidden: string[]; visible: string[] }[] = [
  {
    name: 'OpenStack cloud.conf (INI, quoted and unquoted, comments, application credentials)',
    config: [
      '[Global]',
      'auth-url = https://keystone.example.com:5000/v3',
      'username = "ccm-os-user"',
      'password = "os-Pa55;word#1"',
      'domain-password = "os-q\\"uote-pass"',
      'tenant-id = 8c5b3c0e1d2f',
      'region = RegionOne',
      'application-credential-id = 6f0e3d9a7b',
      'application-credential-secret = os-appcred-secret-9z ; trailing comment',
      '; a comment line',
      '[LoadBalancer]',
      'floating-network-id = 2a4c6e8f0b',
    ].join('\n'),
    hidden: ['os-Pa55;word#1', 'os-appcred-secret-9z', 'os-q"uote-pass', 'os-q\\"uote-pass'],
    visible: ['https://keystone.example.com:5000/v3', 'ccm-os-user', '8c5b3c0e1d2f', '6f0e3d9a7b', '2a4c6e8f0b'],
  },
  {
    name: "vSphere vsphere.conf (INI with a named section, repeated key; secret-name is a Secret's name)",
    config: [
      '[Global]',
      'insecure-flag = "true"',
      'secret-name = "vsphere-cloud-creds"',
      'secret-namespace = "kube-system"',
      '[VirtualCenter "10.0.0.1"]',
      'user = "administrator@vsphere.local"',
      'password = "vS-Ph3re!pass"',
      'password = "vS-second-pass"',
      'datacenters = "dc-east-1"',
    ].join('\n'),
    hidden: ['vS-Ph3re!pass', 'vS-second-pass'],
    visible: ['vsphere-cloud-creds', 'kube-system', 'administrator@vsphere.local', 'dc-east-1'],
  },
  {
    name: 'vSphere vsphere.conf (YAML; a numeric password stays a secret)',
    config: [
      'global:',
      '  user: yaml-admin@vsphere.local',
      '  password: "vs-yaml-pass-1"',
      '  insecureFlag: true',
      'vcenter:',
      '  tenant-a:',
      '    server: 10.0.0.2',
      '    password: 987654321',
      "    bmcPassword: 'it''s-yaml-quoted'",
      '    datacenters: [dc-west-1]',
    ].join('\n'),
    hidden: ['vs-yaml-pass-1', '987654321', "it's-yaml-quoted", "it''s-yaml-quoted"],
    visible: ['yaml-admin@vsphere.local', 'dc-west-1'],
  },
  {
    name: 'Azure azure.json (aadClientSecret, aadClientCertPassword)',
    config: JSON.stringify({
      cloud: 'AzurePublicCloud',
      tenantId: 'az-tenant-0b1c2d',
      subscriptionId: 'az-sub-3e4f5a',
      aadClientId: 'az-client-6b7c8d',
      aadClientSecret: 'az-Cl13nt~Secret.value',
      aadClientCertPath: '/etc/kubernetes/az-cert.pfx',
      aadClientCertPassword: 'az-cert-pass-77',
      resourceGroup: 'az-rg-kube',
      useManagedIdentityExtension: false,
    }),
    hidden: ['az-Cl13nt~Secret.value', 'az-cert-pass-77'],
    visible: ['az-tenant-0b1c2d', 'az-sub-3e4f5a', 'az-client-6b7c8d', '/etc/kubernetes/az-cert.pfx', 'az-rg-kube'],
  },
  {
    name: 'JSON: pwd, connectionString, sasKey, clientKey, privateKeyData, credentials block; keyPair and accessKeyId are not secrets',
    config: JSON.stringify({
      pwd: 'json-pwd-value',
      'connection-string': 'Server=db.example.com;Password=conn-part-pass',
      sasKey: 'json-sas-key-1',
      clientKey: 'json-client-key-2',
      privateKeyData: 'json-private-key-3',
      credentials: { username: 'cred-block-user', secretAccessKey: 'cred-block-secret' },
      keyPair: 'json-keypair-name',
      accessKeyId: 'AKIAJSONVISIBLE',
      storage: { connection: 'DefaultEndpointsProtocol=https;AccountName=jsonacct;AccountKey=Zm9vYmFyYmF6==;EndpointSuffix=core.windows.net' },
      endpoint: 'https://svc-user:url-pass-123@api.example.com/v1',
    }),
    hidden: [
      'json-pwd-value',
      'conn-part-pass',
      'json-sas-key-1',
      'json-client-key-2',
      'json-private-key-3',
      'cred-block-user',
      'cred-block-secret',
      'Zm9vYmFyYmF6==',
      'url-pass-123',
    ],
    visible: ['json-keypair-name', 'AKIAJSONVISIBLE', 'jsonacct', 'core.windows.net'],
  },
  {
    name: 'malformed JSON (a provider may quote it in its parse error): pairs are found as written',
    config: '{"clientSecret": unquoted-typo-secret, "zone": "typo-zone-1", "apiToken": "quoted-typo-token" "missing": "comma"}',
    hidden: ['unquoted-typo-secret', 'quoted-typo-token', '"quoted-typo-token"'],
    visible: ['typo-zone-1'],
  },
  {
    name: 'AWS cloud.conf (INI without secrets: nothing is hidden)',
    config: ['[Global]', 'Zone = us-east-1a', 'RoleARN = arn:aws:iam::123456789012:role/ccm', 'KubernetesClusterTag = aws-cluster-x'].join('\n'),
    hidden: [],
    visible: ['us-east-1a', 'arn:aws:iam::123456789012:role/ccm', 'aws-cluster-x'],
  },
];

for (const c of CLOUD_CONFIGS) {
  test(`cloud config secrets: ${c.name}`, (t) => {
    registerCloudConfigSecrets(Buffer.from(c.config));
    for (const h of c.hidden) t.is(redact(`x ${h} y`), `x ${REDACTED} y`, h);
    for (const v of c.visible) t.is(redact(v), v, v);
  });
}

test('a cloud config in no known format, or a YAML alias bomb, neither throws nor hangs', (t) => {
  for (const config of ['{"password": "unterminated', '\u0000\u0001 binary', '[[[[[['.repeat(100_000)]) {
    t.notThrows(() => registerCloudConfigSecrets(Buffer.from(config)));
  }
  const bomb = [
    'a: &a {password: bomb-secret-1}',
    ...Array.from({ length: 30 }, (_, i) => `l${i + 1}: &l${i + 1} [*${i ? `l${i}` : 'a'}, *${i ? `l${i}` : 'a'}]`),
  ].join('\n');
  registerCloudConfigSecrets(Buffer.from(bomb));
  t.is(redact('bomb-secret-1'), REDACTED);
});

test('secret names: the final word decides', (t) => {
  const secret = [
    'password',
    'OS_PASSWORD',
    'passwd',
    'pwd',
    'aadClientSecret',
    'client-secret',
    'apiKey',
    'api_key',
    'sasKey',
    'privateKey',
    'AccountKey',
    'sessionToken',
    'credentials',
    'connectionString',
    'connection-string',
    'connection_string',
    'privateKeyData',
    'tokens',
  ];
  const notSecret = [
    'keyPair',
    'key-pair',
    'keyName',
    'accessKeyId',
    'AWS_ACCESS_KEY_ID',
    'secretName',
    'secret-namespace',
    'tokenUrl',
    'auth-url',
    'keystone',
    'aadClientCertPath',
    'username',
    'zone',
  ];
  for (const n of secret) t.true(isSecretName(n), n);
  for (const n of notSecret) t.false(isSecretName(n), n);
});

test('secret-named --plugin-env values are secrets', (t) => {
  registerEnvSecrets({
    AWS_SECRET_ACCESS_KEY: 'aws-hidden-000',
    AWS_SESSION_TOKEN: 'aws-hidden-001',
    AWS_ACCESS_KEY_ID: 'AKIAVISIBLE',
    LOCALCLOUD_STATE_DIR: '/var/lib/visible',
  });
  t.is(redact('aws-hidden-000 aws-hidden-001 AKIAVISIBLE /var/lib/visible'), `${REDACTED} ${REDACTED} AKIAVISIBLE /var/lib/visible`);
});

test('log lines lose secrets whatever field holds them, also JSON-escaped', (t) => {
  registerSecret('quote"secret\\x');
  let out = '';
  const log = createLogger({
    destination: new Writable({
      write(c, _e, cb) {
        out += String(c);
        cb();
      },
    }) as never,
  });
  log.info({ err: 'call failed: s3cr3t-value-one', nested: { v: 'quote"secret\\x' } }, 'something failed');
  t.false(out.includes('s3cr3t-value-one'));
  t.false(out.includes('quote\\"secret'));
  t.true(out.includes(REDACTED));
});

test('plugin error messages are redacted before they become host errors', (t) => {
  const err = decodedToCloudError('InstanceMetadata', { code: 13, message: 'auth failed with key s3cr3t-value-one' } as never);
  t.false(err.message.includes('s3cr3t-value-one'));
  t.regex(err.message, /\[redacted\]/);
});

test('text cut at a limit loses the start of a secret the cut split (3 characters on), nothing else', (t) => {
  registerSecret('cut-here-secret-42');
  for (const [text, want] of [
    ['log line ending in cut-here-se', `log line ending in ${REDACTED}`],
    ['both cut-here-secret-42 and cut', `both ${REDACTED} and ${REDACTED}`],
    ['too short to tell: cu', 'too short to tell: cu'],
    ['an ordinary ending', 'an ordinary ending'],
  ])
    t.is(redactCut(text!), want, text);
});

test('error text taken with errorMessage is redacted, whatever was thrown', (t) => {
  registerSecret('thrown-secret-77');
  t.is(errorMessage(new Error('failed with thrown-secret-77')), `failed with ${REDACTED}`);
  t.is(errorMessage('thrown-secret-77'), REDACTED);
});

test('a multi-line secret is also tracked line by line; an over-long single line is counted as untracked, not matched', (t) => {
  const pem = [
    '-----BEGIN PRIVATE KEY-----',
    'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7',
    'b3Blbi1zZWNyZXQta2V5LWxpbmUtdHdv',
    '-----END PRIVATE KEY-----',
  ].join('\n');
  registerCloudConfigSecrets(Buffer.from(JSON.stringify({ privateKey: pem })));
  t.is(redact('line: b3Blbi1zZWNyZXQta2V5LWxpbmUtdHdv'), `line: ${REDACTED}`);
  const before = untrackedSecrets();
  registerSecret('z'.repeat(5000));
  t.is(untrackedSecrets(), before + 1);
  t.is(redact('zzzzzz'), 'zzzzzz');
});
