/**
 * Volumes by StorageClass provisioner (issue 31 item 4): which names a
 * volume provider serves, and the validation of the providers' names (the
 * host refuses to start on any problem).
 */
import test from 'ava';
import { servedProvisioners, volumeProvisionerProblems, type VolumeProvisionerProvider } from '../../../host/volume-provisioners.js';

const p = (name: string, provisioners: string[]): VolumeProvisionerProvider => ({ name, provisioners });

test('servedProvisioners: the flag, else the declaration, else the plugin name (as before the declaration)', (t) => {
  const rows = [
    ['nothing declared, no flag', servedProvisioners([], '', 'local.ccm.dev'), ['local.ccm.dev']],
    ['nothing declared (old provider), no flag', servedProvisioners(undefined, '', 'local.ccm.dev'), ['local.ccm.dev']],
    ['nothing declared, the flag', servedProvisioners([], 'x.example.com', 'local.ccm.dev'), ['x.example.com']],
    ['declared, no flag', servedProvisioners(['a.example.com', 'b.example.com'], '', 'local.ccm.dev'), ['a.example.com', 'b.example.com']],
    ['declared, the flag replaces it', servedProvisioners(['a.example.com'], 'x.example.com', 'local.ccm.dev'), ['x.example.com']],
  ] as const;
  t.deepEqual(
    rows.map(([what, got]) => [what, got]),
    rows.map(([what, , want]) => [what, want]),
  );
});

test('volumeProvisionerProblems: every problem of a set of providers at once', (t) => {
  const rows: [string, VolumeProvisionerProvider[], string[]][] = [
    ['one provider', [p('local', ['local.ccm.dev'])], []],
    ['two providers, distinct names', [p('east', ['east.example.com']), p('west', ['west.example.com', 'w2.example.com'])], []],
    [
      'one name, two providers',
      [p('east', ['local.ccm.dev']), p('west', ['local.ccm.dev'])],
      [
        'volume provisioner "local.ccm.dev" is served by several providers (east, west); give each provisioner one provider: declare volume_provisioners in each (the local cloud: LOCALCLOUD_VOLUME_PROVISIONERS)',
      ],
    ],
    [
      'a name twice in one provider, an invalid name',
      [p('x', ['a.example.com', 'a.example.com', 'Bad_Name'])],
      [
        'provider x declares volume provisioner "a.example.com" twice',
        'provider x: volume provisioner "Bad_Name" is not a valid CSI driver name: use at most 63 lowercase letters, digits, "-" and ".", starting and ending alphanumeric',
      ],
    ],
  ];
  t.deepEqual(
    rows.map(([what, providers]) => [what, volumeProvisionerProblems(providers).sort()]),
    rows.map(([what, , problems]) => [what, [...problems].sort()]),
  );
});
