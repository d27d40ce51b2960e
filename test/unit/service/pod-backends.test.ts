/**
 * Pod-IP backends from EndpointSlices (host/controllers/service/pod-backends.ts):
 * which endpoints a provider gets, and what it gets of each. Tables over
 * hand-made slices; the real-traffic test is
 * test/integration/service/lb-pod-backends.test.ts.
 */
import test from 'ava';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import {
  MAX_POD_BACKENDS,
  podBackendsInput,
  podBackendsOf,
  serviceKeyOfSlice,
  sliceSignature,
  wantsPodBackends,
} from '../../../host/controllers/service/pod-backends.js';

const svc = (o: { annotation?: string; dist?: string } = {}): V1Service => ({
  metadata: {
    name: 'web',
    namespace: 'ns',
    annotations: o.annotation === undefined ? {} : { 'service.ccm.dev/load-balancer-backends': o.annotation },
  },
  spec: {
    type: 'LoadBalancer',
    ports: [
      { name: 'http', port: 80, protocol: 'TCP' },
      { name: 'dns', port: 53, protocol: 'UDP' },
    ],
    ...(o.dist ? { trafficDistribution: o.dist } : {}),
  },
});

type Ep = { ip: string; ready?: boolean; serving?: boolean; terminating?: boolean; zone?: string };

const slice = (family: 'IPv4' | 'IPv6' | 'FQDN', eps: Ep[], ports = [{ name: 'http', port: 8080, protocol: 'TCP' }]): V1EndpointSlice => ({
  metadata: { name: `web-${family}`, namespace: 'ns', labels: { 'kubernetes.io/service-name': 'web' } },
  addressType: family,
  ports,
  endpoints: eps.map((e) => ({
    addresses: [e.ip],
    conditions: { ready: e.ready, serving: e.serving, terminating: e.terminating },
    nodeName: 'n1',
    zone: e.zone ?? 'a',
    targetRef: { kind: 'Pod', namespace: 'ns', name: `pod-${e.ip}` },
  })),
});

const addrs = (s: V1EndpointSlice[], service = svc()) => podBackendsOf(service, s).endpoints.map((e) => e.addresses[0]);

const selection: { name: string; slices: V1EndpointSlice[]; want: string[] }[] = [
  { name: 'ready ones only', slices: [slice('IPv4', [{ ip: '10.0.0.2' }, { ip: '10.0.0.1', ready: false, serving: false }])], want: ['10.0.0.2'] },
  { name: 'unset ready counts as ready', slices: [slice('IPv4', [{ ip: '10.0.0.1' }])], want: ['10.0.0.1'] },
  {
    name: 'terminating excluded while any is ready',
    slices: [
      slice('IPv4', [
        { ip: '10.0.0.1', ready: false, serving: true, terminating: true },
        { ip: '10.0.0.2', ready: true },
      ]),
    ],
    want: ['10.0.0.2'],
  },
  {
    name: 'none ready: the serving terminating ones',
    slices: [
      slice('IPv4', [
        { ip: '10.0.0.1', ready: false, serving: true, terminating: true },
        { ip: '10.0.0.3', ready: false, serving: false },
      ]),
    ],
    want: ['10.0.0.1'],
  },
  { name: 'neither: none', slices: [slice('IPv4', [{ ip: '10.0.0.1', ready: false, serving: false }])], want: [] },
  {
    name: 'dual-stack: both families, sorted, FQDN ignored',
    slices: [slice('IPv6', [{ ip: 'fd00::1' }]), slice('IPv4', [{ ip: '10.0.0.9' }, { ip: '10.0.0.1' }]), slice('FQDN', [{ ip: 'x.example' }])],
    want: ['10.0.0.1', '10.0.0.9', 'fd00::1'],
  },
  { name: 'an address in two slices once', slices: [slice('IPv4', [{ ip: '10.0.0.1' }]), slice('IPv4', [{ ip: '10.0.0.1' }])], want: ['10.0.0.1'] },
  { name: 'an address of the wrong family dropped', slices: [slice('IPv6', [{ ip: '10.0.0.1' }])], want: [] },
  {
    name: 'a slice mapping no Service port: none',
    slices: [slice('IPv4', [{ ip: '10.0.0.1' }], [{ name: 'other', port: 1, protocol: 'TCP' }])],
    want: [],
  },
];
for (const c of selection) test(`selection: ${c.name}`, (t) => t.deepEqual(addrs(c.slices), c.want));

test('each endpoint maps the Service ports its slice has, by name and protocol; carries node, zone, pod and conditions', (t) => {
  const s = slice(
    'IPv4',
    [{ ip: '10.0.0.1', zone: 'z' }],
    [
      { name: 'http', port: 8080, protocol: 'TCP' },
      { name: 'dns', port: 5353, protocol: 'TCP' }, // protocol differs from the Service port's UDP: no match
    ],
  );
  const [e] = podBackendsOf(svc({ dist: 'PreferClose' }), [s]).endpoints;
  t.deepEqual(e, {
    addresses: ['10.0.0.1'],
    ipFamily: 'IPv4',
    ports: [{ name: 'http', servicePort: 80, protocol: 'TCP', port: 8080 }],
    ready: true,
    serving: true,
    terminating: false,
    nodeName: 'n1',
    zone: 'z',
    pod: 'ns/pod-10.0.0.1',
  });
  t.is(podBackendsOf(svc({ dist: 'PreferClose' }), [s]).trafficDistribution, 'PreferClose');
});

test(`at most ${MAX_POD_BACKENDS} endpoints, the rest counted`, (t) => {
  const eps = Array.from({ length: MAX_POD_BACKENDS + 5 }, (_, i) => ({ ip: `10.1.${Math.floor(i / 250)}.${(i % 250) + 1}` }));
  const r = podBackendsOf(svc(), [slice('IPv4', eps)]);
  t.is(r.endpoints.length, MAX_POD_BACKENDS);
  t.is(r.omittedEndpoints, 5);
  t.deepEqual(podBackendsOf(svc(), [slice('IPv4', [...eps].reverse())]), r, 'deterministic whatever the slice order');
});

test('which Services ask, and what of a slice or Service an update is compared by', (t) => {
  t.true(wantsPodBackends(svc({ annotation: 'pods' })));
  t.true(wantsPodBackends(svc({ annotation: 'Pods' })));
  t.false(wantsPodBackends(svc({ annotation: 'nodes' })));
  t.false(wantsPodBackends(svc()));
  t.is(podBackendsInput(svc()), '', 'a Service not asking: trafficDistribution is no input');
  t.not(podBackendsInput(svc({ annotation: 'pods' })), podBackendsInput(svc({ annotation: 'pods', dist: 'PreferClose' })));
  const s = slice('IPv4', [{ ip: '10.0.0.1' }]);
  t.is(serviceKeyOfSlice(s), 'ns/web');
  t.is(sliceSignature(s), sliceSignature({ ...s, metadata: { ...s.metadata, resourceVersion: '9', annotations: { x: 'y' } } }), 'metadata noise');
  t.not(sliceSignature(s), sliceSignature(slice('IPv4', [{ ip: '10.0.0.1', ready: false }])), 'a condition');
});
