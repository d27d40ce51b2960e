/** The local cloud's volume provisioner declaration from its environment (LOCALCLOUD_VOLUME_PROVISIONERS). */
import test from 'ava';
import { applyCloudConfig, resolveSettings } from '../../../plugins/local/config.js';

test('provisioner names from the environment, kept across Configure', (t) => {
  const rows = [
    ['unset', {}, []],
    ['one name', { LOCALCLOUD_VOLUME_PROVISIONERS: 'east.local.ccm.dev' }, ['east.local.ccm.dev']],
    [
      'two names, spaces and empty entries',
      { LOCALCLOUD_VOLUME_PROVISIONERS: ' a.example.com, ,b.example.com,' },
      ['a.example.com', 'b.example.com'],
    ],
  ] as const;
  t.deepEqual(
    rows.map(([what, env]) => [what, applyCloudConfig(resolveSettings({}, env), new Uint8Array(), 'c').settings.volumeProvisioners]),
    rows.map(([what, , names]) => [what, names]),
  );
});
