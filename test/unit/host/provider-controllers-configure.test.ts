/**
 * What the supervisor sends in Configure for the provider's own controllers
 * (ConfigureRequest.controllers, node_selector, watch_namespace,
 * controllers_lease), against an in-process provider that records every
 * Configure: the host's scope always; a lease of what the leader can vouch
 * for with the controllers; renewals that repeat the input; none once the
 * fence is closed.
 */
import test from 'ava';
import { pino } from 'pino';
import { createLogger } from '../../../host/log.js';
import { PluginSupervisor } from '../../../host/plugin/supervisor.js';
import type { ConfigureRequest } from '../../../proto/gen/ccm/provider/v1/lifecycle.js';
import type { CloudProvider } from '../../../sdk/index.js';
import { startInProcess } from '../../../sdk/testing.js';
import { waitFor } from '../../helpers/wait.js';

interface Seen {
  controllers: string[];
  nodeSelector: string;
  watchNamespace: string;
  leaseMs?: number;
}

const seen = (r: ConfigureRequest): Seen => ({
  controllers: r.controllers,
  nodeSelector: r.nodeSelector,
  watchNamespace: r.watchNamespace,
  ...(r.controllersLease ? { leaseMs: Number(r.controllersLease.seconds) * 1000 + r.controllersLease.nanos / 1e6 } : {}),
});

async function setUp(t: import('ava').ExecutionContext, controllersLeaseMs?: () => number) {
  const requests: Seen[] = [];
  const provider: CloudProvider = {
    info: { name: 'acme.example.com', vendorVersion: '1', providerName: 'acme' },
    async configure(req) {
      requests.push(seen(req));
    },
  };
  const p = await startInProcess(provider, { logger: pino({ level: 'silent' }), configure: false });
  const supervisor = new PluginSupervisor({
    name: 'acme',
    mode: { kind: 'socket', endpoint: p.endpoint },
    startTimeoutMs: 10_000,
    shutdownGraceMs: 100,
    configure: {
      cloudConfig: Buffer.alloc(0),
      clusterName: 'test',
      hostVersion: 'test',
      nodeSelector: 'pool=a',
      watchNamespace: 'team-a',
      controllersLeaseMs,
    },
    probeIntervalMs: 60_000,
    log: createLogger({ level: 'silent' }),
  });
  t.teardown(async () => {
    await supervisor.stop();
    await p.close();
  });
  await supervisor.start();
  return { requests, supervisor };
}

const SCOPE = { nodeSelector: 'pool=a', watchNamespace: 'team-a' };

test('with leader election: the controllers go with a lease of what the leader can vouch for, renewed with the same input; none once it can vouch for nothing', async (t) => {
  let vouch = 4_000;
  const { requests, supervisor } = await setUp(t, () => vouch);
  await supervisor.runProviderControllers(['tagging']);
  vouch = 3_500;
  supervisor.renewProviderControllers();
  await waitFor(() => requests.length === 3, { what: 'the renewal' });
  vouch = 0;
  supervisor.renewProviderControllers(); // the fence is closed: nothing to renew
  await supervisor.runProviderControllers([]);
  t.deepEqual(requests, [
    { controllers: [], ...SCOPE }, // start-up, not leading yet
    { controllers: ['tagging'], ...SCOPE, leaseMs: 4_000 },
    { controllers: ['tagging'], ...SCOPE, leaseMs: 3_500 },
    { controllers: [], ...SCOPE },
  ]);
});

test('a leader whose fence closed asks for no controllers rather than a lease of nothing', async (t) => {
  const { requests, supervisor } = await setUp(t, () => 0);
  await supervisor.runProviderControllers(['tagging']);
  t.deepEqual(requests.at(-1), { controllers: [], ...SCOPE });
});

test('without leader election: the controllers, the scope and no lease; renewals send nothing', async (t) => {
  const { requests, supervisor } = await setUp(t);
  await supervisor.runProviderControllers(['tagging']);
  supervisor.renewProviderControllers();
  await supervisor.runProviderControllers([]);
  t.deepEqual(requests, [
    { controllers: [], ...SCOPE },
    { controllers: ['tagging'], ...SCOPE },
    { controllers: [], ...SCOPE },
  ]);
});
