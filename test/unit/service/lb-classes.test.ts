/**
 * Load balancers by class (issue 31 item 3): the validation of the providers'
 * declarations (the host refuses to start on any problem), the resolver,
 * and the plan the service controller follows for each Service.
 */
import test from 'ava';
import type { V1Service } from '@kubernetes/client-node';
import { lbClassDeclaration, lbClassProblems, LbClassResolver, type LbClassProvider } from '../../../host/lb-classes.js';
import { planFor, recordedMaker, type LbMaker } from '../../../host/controllers/service/lb-owner.js';

const A = 'example.com/a';
const B = 'example.com/b';
const FIN = 'service.kubernetes.io/load-balancer-cleanup';
const PROVIDER = 'service.ccm.dev/load-balancer-provider';
const CLASS = 'service.ccm.dev/load-balancer-class';

const p = (name: string, classes: string[], unclassed: boolean): LbClassProvider => ({ name, classes: { classes, unclassed } });

test('the declaration from GetPluginCapabilities: providers before the fields serve Services without a class only', (t) => {
  t.deepEqual(
    [
      lbClassDeclaration({}),
      lbClassDeclaration({ loadBalancerClasses: [], loadBalancerClassesOnly: false }),
      lbClassDeclaration({ loadBalancerClasses: [A], loadBalancerClassesOnly: false }),
      lbClassDeclaration({ loadBalancerClasses: [A], loadBalancerClassesOnly: true }),
    ],
    [
      { classes: [], unclassed: true },
      { classes: [], unclassed: true },
      { classes: [A], unclassed: true },
      { classes: [A], unclassed: false },
    ],
  );
});

test('lbClassProblems: every problem of a set of providers at once', (t) => {
  const rows: [string, LbClassProvider[], string[]][] = [
    ['one provider, no declaration', [p('local', [], true)], []],
    ['one provider, a class and unclassed', [p('local', [A], true)], []],
    ['two providers, one unclassed', [p('x', [A], true), p('y', [B], false)], []],
    [
      'two providers serving unclassed Services',
      [p('x', [], true), p('y', [B], true)],
      ['several providers serve Services without a loadBalancerClass (x, y); at most one may: set load_balancer_classes_only on the others'],
    ],
    [
      'one class, two providers',
      [p('x', [A], true), p('y', [A, B], false)],
      ['load balancer class "example.com/a" is declared by several providers (x, y); give each class one provider'],
    ],
    [
      'a class twice in one provider, an invalid class, two providers of one name',
      [p('x', [A, A, 'Bad Class/x'], false), p('x', [], false)],
      [
        'two load-balancer providers are named "x"',
        'provider x declares load balancer class "example.com/a" twice',
        'provider x: load balancer class "Bad Class/x": the prefix must be a DNS subdomain of at most 253 characters',
      ].sort(),
    ],
    ['an unprefixed class is valid (reserved for end users, as Kubernetes says)', [p('x', ['internal-vip'], true)], []],
  ];
  t.deepEqual(
    rows.map(([what, providers]) => [what, lbClassProblems(providers).sort()]),
    rows.map(([what, , want]) => [what, want]),
  );
  t.throws(() => new LbClassResolver([p('x', [], true), p('y', [], true)]), {
    message: /several providers serve Services without a loadBalancerClass/,
  });
});

test('the resolver: the one provider of each class, nobody for the rest', (t) => {
  const r = new LbClassResolver([p('x', [A], true), p('y', [B], false)]);
  const svc = (type: string, cls?: string): V1Service => ({ spec: { type, loadBalancerClass: cls } });
  t.deepEqual(
    [svc('LoadBalancer'), svc('LoadBalancer', A), svc('LoadBalancer', B), svc('LoadBalancer', 'example.com/unclaimed'), svc('ClusterIP')].map(
      (s) => r.forService(s)?.name,
    ),
    ['x', 'x', 'y', undefined, undefined],
  );
  const classesOnly = new LbClassResolver([p('y', [B], false)]);
  t.is(classesOnly.forClass(''), undefined, 'no provider serves Services without a class');
});

/** A Service as cached, for the plan table. */
function service(o: { type?: string; cls?: string; finalizer?: boolean; maker?: LbMaker; deleting?: boolean }): V1Service {
  const annotations: Record<string, string> = { user: 'x' };
  if (o.maker) Object.assign(annotations, { [PROVIDER]: o.maker.provider, [CLASS]: o.maker.class });
  return {
    metadata: {
      name: 's',
      namespace: 'ns',
      uid: 'u1',
      annotations,
      finalizers: o.finalizer || o.maker ? [FIN] : [],
      deletionTimestamp: o.deleting ? new Date() : undefined,
    },
    spec: { type: o.type ?? 'LoadBalancer', loadBalancerClass: o.cls },
  };
}

test('planFor: who ensures, who cleans up, and what is left alone', (t) => {
  // x serves class a and unclassed Services, y serves class b.
  const r = new LbClassResolver([p('x', [A], true), p('y', [B], false)]);
  const U = 'example.com/unclaimed';
  const describe = (plan: ReturnType<typeof planFor>) =>
    plan.kind === 'ensure'
      ? `ensure by ${plan.provider.name}`
      : plan.kind === 'cleanup'
        ? `cleanup by ${plan.provider.name} of class "${plan.maker.class}"${plan.then ? `, then ensure by ${plan.then.name}` : ''}${plan.keepStatus ? ', status kept' : ''}`
        : plan.kind;
  const rows: [string, V1Service, LbMaker | undefined, string][] = [
    ['unclassed, new', service({}), undefined, 'ensure by x'],
    ['class a, new', service({ cls: A }), undefined, 'ensure by x'],
    ['class b, new', service({ cls: B }), undefined, 'ensure by y'],
    ['unclaimed class, new', service({ cls: U }), undefined, 'none'],
    ['ClusterIP', service({ type: 'ClusterIP' }), undefined, 'none'],
    ['unclassed with a finalizer (upstream or before classes)', service({ finalizer: true }), undefined, 'ensure by x'],
    ['class a, recorded by x', service({ cls: A, maker: { provider: 'x', class: A } }), undefined, 'ensure by x'],
    // Class changes (through a type change the host may not have seen).
    ['class a → ClusterIP', service({ type: 'ClusterIP', maker: { provider: 'x', class: A } }), undefined, 'cleanup by x of class "example.com/a"'],
    ['class a → unclaimed', service({ cls: U, maker: { provider: 'x', class: A } }), undefined, 'cleanup by x of class "example.com/a", status kept'],
    [
      'class a → class b',
      service({ cls: B, maker: { provider: 'x', class: A } }),
      undefined,
      'cleanup by x of class "example.com/a", then ensure by y, status kept',
    ],
    ['unclassed (no record) → class b', service({ cls: B, finalizer: true }), undefined, 'cleanup by x of class "", then ensure by y, status kept'],
    ['unclassed (no record) → ClusterIP', service({ type: 'ClusterIP', finalizer: true }), undefined, 'cleanup by x of class ""'],
    ['class b, deleted', service({ cls: B, maker: { provider: 'y', class: B }, deleting: true }), undefined, 'cleanup by y of class "example.com/b"'],
    // Not provably ours: never touched.
    ["unclaimed class with a finalizer and no record (another controller's)", service({ cls: U, finalizer: true }), undefined, 'none'],
    ['recorded by a provider this host does not run', service({ cls: A, maker: { provider: 'gone', class: A } }), undefined, 'stuck'],
    ['class a no longer served by its maker (configuration changed)', service({ cls: B, maker: { provider: 'x', class: B } }), undefined, 'stuck'],
    // The controller's own memory covers a finalizer removed by hand.
    [
      'finalizer removed by hand, then ClusterIP',
      service({ type: 'ClusterIP' }),
      { provider: 'y', class: B },
      'cleanup by y of class "example.com/b"',
    ],
  ];
  t.deepEqual(
    rows.map(([what, svc, tracked]) => [what, describe(planFor(svc, r, tracked))]),
    rows.map(([what, , , want]) => [what, want]),
  );
  t.is(recordedMaker(service({ cls: U, finalizer: true }), r), undefined);
});
