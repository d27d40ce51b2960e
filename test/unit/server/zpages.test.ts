/**
 * /statusz and /flagz content (host/server/zpages.ts) and what /flagz shows
 * of the command line (flagzValues): upstream's text and structured forms,
 * its Accept restrictions, and credentials shown as CLASSIFIED. The paths'
 * authorization is tested against the real API server in
 * test/integration/secure-serving.test.ts.
 */
import test from 'ava';
import { flagzValues } from '../../../host/config/flags.js';
import { flagzResponse, statuszResponse, type StatuszInfo } from '../../../host/server/zpages.js';

const INFO: StatuszInfo = {
  component: 'cloud-controller-manager',
  startTime: new Date('2026-11-28T08:00:00Z'),
  now: new Date('2026-11-28T09:02:03Z'),
  binaryVersion: '0.1.0',
  emulationVersion: '1.34',
  runtimeVersion: 'node v24.18.0',
  paths: ['/readyz', '/healthz', '/metrics', '/statusz'],
};
const STRUCTURED = 'application/json;as=Statusz;v=v1beta1;g=config.k8s.io';

const ACCEPT: { accept: string | undefined; status: number; type: RegExp; warning?: boolean }[] = [
  { accept: undefined, status: 200, type: /^text\/plain/ },
  { accept: '*/*', status: 200, type: /^text\/plain/ },
  { accept: 'text/plain', status: 200, type: /^text\/plain/ },
  { accept: STRUCTURED, status: 200, type: /^application\/json;as=Statusz;g=config\.k8s\.io;v=v1beta1$/ },
  { accept: `text/html;q=0.9, ${STRUCTURED}`, status: 200, type: /^application\/json/ },
  { accept: 'application/json;as=Statusz;v=v1alpha1;g=config.k8s.io', status: 200, type: /v=v1alpha1$/, warning: true },
  { accept: 'application/json', status: 406, type: /^text\/plain/ },
  { accept: 'application/json;as=Statusz;v=v9;g=config.k8s.io', status: 406, type: /^text\/plain/ },
  { accept: 'application/json;as=Flagz;v=v1beta1;g=config.k8s.io', status: 406, type: /^text\/plain/ },
  { accept: 'application/yaml', status: 406, type: /^text\/plain/ },
];

for (const a of ACCEPT) {
  test(`/statusz with Accept ${JSON.stringify(a.accept)}: ${a.status}`, (t) => {
    const r = statuszResponse(a.accept, INFO);
    t.is(r.status, a.status, r.body);
    t.regex(r.contentType, a.type);
    t.is(r.headers?.Warning !== undefined, a.warning === true);
  });
}

test('/statusz text: header, uptime, versions and paths', (t) => {
  const body = statuszResponse(undefined, INFO).body;
  t.regex(
    body,
    /^\ncloud-controller-manager statusz\nWarning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only\.\n\nStarted(:|: | |=) Sat, 28 Nov 2026 08:00:00 GMT\nUp(:|: | |=) 1 hr 02 min 03 sec\nRuntime version(:|: | |=) node v24\.18\.0\nBinary version(:|: | |=) 0\.1\.0\nEmulation version(:|: | |=) 1\.34\nPaths(:|: | |=) \/healthz \/metrics \/readyz \/statusz\n$/,
  );
});

test('/statusz structured: the v1beta1 Statusz object', (t) => {
  t.deepEqual(JSON.parse(statuszResponse(STRUCTURED, INFO).body), {
    kind: 'Statusz',
    apiVersion: 'config.k8s.io/v1beta1',
    metadata: { name: 'cloud-controller-manager' },
    startTime: '2026-11-28T08:00:00Z',
    uptimeSeconds: 3723,
    goVersion: 'node v24.18.0',
    binaryVersion: '0.1.0',
    emulationVersion: '1.34',
    paths: ['/healthz', '/metrics', '/readyz', '/statusz'],
  });
});

test('/flagz: sorted text and the v1beta1 Flagz object', (t) => {
  const flags = { 'secure-port': '10258', controllers: '[*]' };
  t.regex(flagzResponse(undefined, 'ccm', flags).body, /\nccm flagz\n.*\ncontrollers(:|: | |=)\[\*\]\nsecure-port(:|: | |=)10258\n$/);
  t.deepEqual(JSON.parse(flagzResponse('application/json;as=Flagz;v=v1beta1;g=config.k8s.io', 'ccm', flags).body), {
    kind: 'Flagz',
    apiVersion: 'config.k8s.io/v1beta1',
    metadata: { name: 'ccm' },
    flags: { controllers: '[*]', 'secure-port': '10258' },
  });
});

test('flagzValues: effective values as pflag prints them, credentials CLASSIFIED', (t) => {
  const f = flagzValues({
    cloudProvider: 'aws',
    pluginEnv: ['AWS_SECRET_ACCESS_KEY=hunter2'],
    providerArgs: ['--token=abc'],
    controllers: ['cloud-node', 'service'],
  });
  t.is(f['cloud-provider'], 'aws');
  t.is(f['plugin-env'], 'CLASSIFIED');
  t.is(f['provider-arg'], 'CLASSIFIED');
  t.is(f.controllers, '[cloud-node,service]');
  t.is(f['secure-port'], '10258');
  t.is(f['leader-elect'], 'true');
  t.is(f['tls-cert-file'], '');
  t.false(JSON.stringify(f).includes('hunter2'));
  const none = flagzValues({});
  t.is(none['plugin-env'], '[]');
});
