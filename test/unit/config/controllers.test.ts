/** resolveEnabledControllers: upstream IsControllerEnabled semantics, with aliases. */
import test from 'ava';
import { resolveEnabledControllers } from '../../../host/config/config.js';
import { Controllers, type ControllerName } from '../../../host/names.js';

const { CLOUD_NODE, CLOUD_NODE_LIFECYCLE, SERVICE_LB, NODE_ROUTE, NODE_IPAM } = Controllers;
const VOLUMES = [Controllers.VOLUME_PROVISIONER, Controllers.VOLUME_ATTACHER, Controllers.VOLUME_RESIZER, Controllers.PV_LABEL];

const cases: { description: string; spec: string[]; want: ControllerName[] }[] = [
  { description: 'star enables all', spec: ['*'], want: [CLOUD_NODE, CLOUD_NODE_LIFECYCLE, SERVICE_LB, NODE_ROUTE, NODE_IPAM, ...VOLUMES] },
  { description: 'empty enables none', spec: [], want: [] },
  { description: 'names without star enable only those', spec: ['cloud-node-controller', 'route'], want: [CLOUD_NODE, NODE_ROUTE] },
  { description: 'star minus alias', spec: ['*', '-service'], want: [CLOUD_NODE, CLOUD_NODE_LIFECYCLE, NODE_ROUTE, NODE_IPAM, ...VOLUMES] },
  {
    description: 'star minus canonical name',
    spec: ['-cloud-node-lifecycle-controller', '*'],
    want: [CLOUD_NODE, SERVICE_LB, NODE_ROUTE, NODE_IPAM, ...VOLUMES],
  },
  { description: 'first mention wins: enable then disable', spec: ['service', '-service'], want: [SERVICE_LB] },
  {
    description: 'first mention wins: disable then enable, alias and canonical mixed',
    spec: ['-service', 'service-lb-controller', '*'],
    want: [CLOUD_NODE, CLOUD_NODE_LIFECYCLE, NODE_ROUTE, NODE_IPAM, ...VOLUMES],
  },
  { description: 'only disables, no star', spec: ['-route'], want: [] },
];

for (const c of cases) {
  test(c.description, (t) => {
    t.deepEqual([...resolveEnabledControllers(c.spec)], c.want);
  });
}

test('unknown names throw with the valid names', (t) => {
  const err = t.throws(() => resolveEnabledControllers(['*', '-bogus']));
  t.regex(err!.message, /unknown controller "-bogus".*cloud-node-controller \(alias cloud-node\)/);
});
