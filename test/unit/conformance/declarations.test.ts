/**
 * The kit's consistency rules for a provider's load balancer class
 * declaration (identity/load-balancer-classes), as a table over
 * capabilities answers, including those no SDK can produce (classes without
 * the load balancer service). The integration test
 * (test/integration/conformance/kit.test.ts) runs the check against a real
 * provider process.
 */
import test from 'ava';
import { lbClassDeclarationProblems } from '../../../conformance/checks/identity.js';
import { GetPluginCapabilitiesResponse, Service } from '../../../proto/gen/ccm/provider/v1/identity.js';

const LB = [Service.SERVICE_LOAD_BALANCERS];

const CASES: { name: string; caps: Partial<GetPluginCapabilitiesResponse>; problems: RegExp[] }[] = [
  { name: 'no declaration', caps: { services: LB }, problems: [] },
  { name: 'prefixed classes, also unclassed', caps: { services: LB, loadBalancerClasses: ['example.com/a', 'lb.example.org/b'] }, problems: [] },
  { name: 'prefixed classes only', caps: { services: LB, loadBalancerClasses: ['example.com/a'], loadBalancerClassesOnly: true }, problems: [] },
  {
    name: 'classes without the load balancer service',
    caps: { services: [Service.SERVICE_INSTANCES], loadBalancerClasses: ['example.com/a'] },
    problems: [/^load_balancer_classes declared without SERVICE_LOAD_BALANCERS/],
  },
  {
    name: '_only without a class',
    caps: { services: LB, loadBalancerClassesOnly: true },
    problems: [/^load_balancer_classes_only is set with no load_balancer_classes/],
  },
  { name: 'an unprefixed class', caps: { services: LB, loadBalancerClasses: ['internal'] }, problems: [/"internal" has no prefix/] },
  {
    name: 'reserved namespaces',
    caps: { services: LB, loadBalancerClasses: ['kubernetes.io/a', 'service.k8s.io/b', 'notk8s.io/c'] },
    problems: [/"kubernetes\.io\/a" is in a namespace Kubernetes reserves/, /"service\.k8s\.io\/b" is in a namespace Kubernetes reserves/],
  },
  {
    name: 'an invalid class and a repeated one, all reported',
    caps: { services: LB, loadBalancerClasses: ['Example.com/a', 'example.com/b', 'example.com/b'] },
    problems: [
      /provider acme: load balancer class "Example\.com\/a": the prefix must be a DNS subdomain/,
      /declares load balancer class "example\.com\/b" twice/,
    ],
  },
];

for (const c of CASES) {
  test(`identity/load-balancer-classes: ${c.name}`, (t) => {
    const problems = lbClassDeclarationProblems(GetPluginCapabilitiesResponse.fromPartial({ providerName: 'acme', ...c.caps }));
    t.is(problems.length, c.problems.length, problems.join('\n'));
    c.problems.forEach((re, i) => t.regex(problems[i] ?? '', re));
  });
}
