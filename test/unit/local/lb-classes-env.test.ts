/** The local cloud's load balancer class declaration from its environment (LOCALCLOUD_LB_CLASSES, LOCALCLOUD_LB_CLASSES_ONLY). */
import test from 'ava';
import { applyCloudConfig, resolveSettings } from '../../../plugins/local/config.js';

test('classes from the environment, kept across Configure', (t) => {
  const rows = [
    ['unset', {}, [], false],
    ['one class', { LOCALCLOUD_LB_CLASSES: 'example.com/a' }, ['example.com/a'], false],
    [
      'two classes, spaces and empty entries',
      { LOCALCLOUD_LB_CLASSES: ' example.com/a, ,example.com/b,' },
      ['example.com/a', 'example.com/b'],
      false,
    ],
    ['classes only', { LOCALCLOUD_LB_CLASSES: 'example.com/a', LOCALCLOUD_LB_CLASSES_ONLY: 'true' }, ['example.com/a'], true],
  ] as const;
  t.deepEqual(
    rows.map(([what, env]) => {
      const s = applyCloudConfig(resolveSettings({}, env), new Uint8Array(), 'c').settings;
      return [what, s.loadBalancerClasses, s.loadBalancerClassesOnly];
    }),
    rows.map(([what, , classes, only]) => [what, classes, only]),
  );
  t.throws(() => resolveSettings({}, { LOCALCLOUD_LB_CLASSES_ONLY: 'yes' }), {
    message: 'LOCALCLOUD_LB_CLASSES_ONLY must be true or false, not "yes"',
  });
});
