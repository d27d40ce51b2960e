/**
 * Route controller start-up checks: with routes enabled and supported, a
 * missing --cluster-cidr stops the host at start-up with one clear line; a
 * malformed one is a flag error; --configure-cloud-routes=false skips it.
 */
import test from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HostStartError } from '../../../host/app.js';
import { parseHostArgs } from '../../../host/config/flags.js';
import { startTestHost } from '../../helpers/host.js';
import { testScope } from '../../helpers/nodes.js';

const scope = testScope('rtc');

test('no --cluster-cidr with the route controller enabled is a start-up error naming the flag', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-route-config-it-'));
  const err = await t.throwsAsync(startTestHost(dir, ['--controllers=route', `--node-selector=${scope.selector}`]));
  t.true(err instanceof HostStartError);
  t.regex(err!.message, /--cluster-cidr is required by the route controller/);
  t.false(err!.message.includes('\n'));
});

test('--configure-cloud-routes=false runs without --cluster-cidr (the route controller is skipped)', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-route-config-it-'));
  const host = await startTestHost(dir, ['--controllers=route', '--configure-cloud-routes=false', `--node-selector=${scope.selector}`]);
  const running = await host.metrics.registry.getSingleMetric('running_managed_controllers')!.get();
  t.false(running.values.some((v) => v.labels.name === 'route' && v.value === 1));
  await host.stop();
});

test('--cluster-cidr=foo and a node mask larger than the cluster CIDR are flag errors', (t) => {
  const base = ['--cloud-provider=local', '--plugin-endpoint=unix:///tmp/x.sock'];
  const a = parseHostArgs([...base, '--cluster-cidr=foo']);
  t.true('errors' in a && a.errors.some((e) => e.includes('--cluster-cidr="foo" is invalid')));
  const b = parseHostArgs([...base, '--cluster-cidr=10.0.0.0/24', '--allocate-node-cidrs', '--node-cidr-mask-size=16']);
  t.true('errors' in b && b.errors.some((e) => e.includes('does not fit --cluster-cidr 10.0.0.0/24')));
});
