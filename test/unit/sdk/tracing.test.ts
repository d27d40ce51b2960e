/**
 * When tracing is on (sdk/tracing.ts: off by default, the standard OTel
 * variables turn it on), what the host passes to a plugin, and the span
 * names of API writes.
 */
import test from 'ava';
import { resourceOf } from '../../../host/kube/rest.js';
import { tracingPluginEnv } from '../../../host/plugin/tracing.js';
import { tracingRequested, tracingStarted } from '../../../sdk/tracing.js';

const ENDPOINT = 'http://collector:4318/v1/traces';

const ON_OFF: [string, NodeJS.ProcessEnv, boolean][] = [
  ['nothing set (the default)', {}, false],
  ['traces endpoint', { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: ENDPOINT }, true],
  ['generic endpoint', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, true],
  ['exporter otlp, no endpoint (SDK default localhost:4318)', { OTEL_TRACES_EXPORTER: 'otlp' }, true],
  ['exporter console', { OTEL_TRACES_EXPORTER: 'console' }, true],
  ['exporter none, endpoint set', { OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: ENDPOINT }, false],
  ['unknown exporter only', { OTEL_TRACES_EXPORTER: 'zipkin' }, false],
  ['SDK disabled, endpoint set', { OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: ENDPOINT }, false],
  ['other OTel variables only', { OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' }, false],
];

for (const [name, env, on] of ON_OFF) test(`tracing ${on ? 'on' : 'off'}: ${name}`, (t) => t.is(tracingRequested(env), on));

test('nothing started in a process that asked for nothing', (t) => t.false(tracingStarted()));

test('plugin env: nothing when off; OTEL_* but credentials, with the provider service.name, when on', (t) => {
  t.deepEqual(tracingPluginEnv('local', { OTEL_SERVICE_NAME: 'x', PATH: '/bin' }), []);
  t.deepEqual(
    tracingPluginEnv('local', {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: ENDPOINT,
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=secret',
      OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY: '/key.pem',
      OTEL_SERVICE_NAME: 'cloud-controller-manager',
      SECRET: 'no',
    }).sort(),
    [`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=${ENDPOINT}`, 'OTEL_SERVICE_NAME=ccm-provider-local'],
  );
});

const PATHS: [string, string][] = [
  ['/api/v1/namespaces/ns/services/web/status', 'services/status'],
  ['/api/v1/namespaces/ns/services/web', 'services'],
  ['/api/v1/namespaces/ns/events', 'events'],
  ['/api/v1/nodes/n1/status', 'nodes/status'],
  ['/api/v1/namespaces', 'namespaces'],
  ['/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/ccm', 'leases'],
  ['/apis/storage.k8s.io/v1/volumeattachments/va-1/status?fieldManager=x', 'volumeattachments/status'],
];
for (const [path, resource] of PATHS) test(`write span name: ${path} → ${resource}`, (t) => t.is(resourceOf(path), resource));
