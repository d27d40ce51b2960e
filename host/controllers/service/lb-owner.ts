/**
 * Which provider made a Service's load balancer, and what the service
 * controller does with a Service given its providers' class declarations
 * (host/lb-classes.ts). Pure functions on Kubernetes objects.
 *
 * The cleanup finalizer alone does not say who made the load balancer: with
 * several providers, or once a Service changed class, the provider that
 * serves the Service now may not be the one that made it; and other
 * controllers (of classes this host does not serve) may use the same
 * upstream finalizer name. So the host records the maker on the Service, in
 * the same write that adds the finalizer:
 *  - a Service with a loadBalancerClass gets the annotations
 *    service.ccm.dev/load-balancer-provider (the provider's name) and
 *    service.ccm.dev/load-balancer-class (the class it was made for);
 *  - a Service without a class gets none (as upstream, so a one-provider
 *    host writes exactly what it wrote before): its load balancer was made
 *    by the provider serving Services without a class, for no class. The
 *    same holds for a finalizer written before classes were served.
 * A finalizer without these annotations on a LoadBalancer Service of a class
 * no provider here serves is not ours (another controller's finalizer of the
 * same name): such a Service is left alone entirely.
 */
import type { V1Service } from '@kubernetes/client-node';
import { classOf, type LbClassProvider, type LbClassResolver } from '../../lb-classes.js';
import { Annotations, Finalizers } from '../../names.js';
import { hasLbFinalizer, isLoadBalancer } from './predicates.js';

/** Who made a Service's load balancer, for which class ('' = none). */
export interface LbMaker {
  provider: string;
  class: string;
}

/** The annotations that record `maker` on a Service (none for a load balancer made for no class). */
export function makerAnnotations(maker: LbMaker): Record<string, string> | undefined {
  return maker.class === '' ? undefined : { [Annotations.LB_PROVIDER]: maker.provider, [Annotations.LB_CLASS]: maker.class };
}

/** Whether the Service carries a maker annotation. */
export function hasMakerAnnotations(svc: V1Service): boolean {
  const a = svc.metadata?.annotations ?? {};
  return a[Annotations.LB_PROVIDER] !== undefined || a[Annotations.LB_CLASS] !== undefined;
}

/**
 * The maker recorded on the Service, or undefined when it has no load
 * balancer of ours: no cleanup finalizer, or a finalizer that is not provably
 * ours (see the file comment). `unclassed` is the provider serving Services
 * without a class.
 */
export function recordedMaker(svc: V1Service, resolver: LbClassResolver): LbMaker | undefined {
  if (!hasLbFinalizer(svc)) return undefined;
  const a = svc.metadata?.annotations ?? {};
  const provider = a[Annotations.LB_PROVIDER];
  if (provider !== undefined) return { provider, class: a[Annotations.LB_CLASS] ?? '' };
  // No record: made for no class, by the provider serving unclassed Services,
  // unless the Service is now a LoadBalancer of a class no provider here serves.
  if (isLoadBalancer(svc) && classOf(svc) !== '' && !resolver.forClass(classOf(svc))) return undefined;
  const unclassed = resolver.unclassed;
  return unclassed ? { provider: unclassed.name, class: '' } : undefined;
}

/** What a sync does with a Service. */
export type LbPlan<P extends LbClassProvider> =
  /** Not ours: no finalizer, event or status write. */
  | { kind: 'none' }
  /** Ensure the load balancer with `provider`. */
  | { kind: 'ensure'; provider: P }
  /**
   * Delete the load balancer `maker` made (with `provider`, its maker), then,
   * when `then` is set, ensure one with `then` (the Service changed to a class
   * another of our providers serves). `keepStatus`: the status is not
   * cleared (it is now another controller's, or is rewritten by `then`).
   */
  | { kind: 'cleanup'; provider: P; maker: LbMaker; then?: P; keepStatus: boolean }
  /**
   * Ours, but nothing may be done: its maker is not one of this host's
   * providers, or its class is unchanged but no longer served by its maker
   * (the configuration changed). Nothing is deleted on a configuration
   * change; the reason goes to a Warning event.
   */
  | { kind: 'stuck'; reason: string };

/**
 * The plan for `svc` (as cached) given the providers and `tracked`, the
 * maker the controller itself remembers for it (a finalizer removed by
 * hand must not make the load balancer forgotten).
 */
export function planFor<P extends LbClassProvider>(svc: V1Service, resolver: LbClassResolver<P>, tracked?: LbMaker): LbPlan<P> {
  const deleting = (svc.metadata?.deletionTimestamp ?? undefined) !== undefined;
  const target = deleting ? undefined : resolver.forService(svc);
  const maker = recordedMaker(svc, resolver) ?? tracked;
  if (!maker) return target ? { kind: 'ensure', provider: target } : { kind: 'none' };
  const made = resolver.named(maker.provider);
  const changed = deleting || !isLoadBalancer(svc) || classOf(svc) !== maker.class;
  if (!made)
    return {
      kind: 'stuck',
      reason: `its load balancer was made by provider ${JSON.stringify(maker.provider)}, which this host does not run: nothing is deleted or ensured; clean it up with that provider, then remove the finalizer ${Finalizers.LB_CLEANUP}`,
    };
  if (changed)
    return { kind: 'cleanup', provider: made, maker, then: target, keepStatus: target !== undefined || (isLoadBalancer(svc) && !deleting) };
  if (target?.name === made.name) return { kind: 'ensure', provider: target };
  return {
    kind: 'stuck',
    reason: `its load balancer class ${JSON.stringify(maker.class)} is no longer served by provider ${JSON.stringify(maker.provider)}, which made its load balancer: nothing is deleted or ensured (change the Service's type to clean it up)`,
  };
}

/** A copy of `svc` without the cleanup finalizer and the maker annotations (the cache's object is not changed). */
export function withoutRecord(svc: V1Service): V1Service {
  const annotations = { ...(svc.metadata?.annotations ?? {}) };
  delete annotations[Annotations.LB_PROVIDER];
  delete annotations[Annotations.LB_CLASS];
  return {
    ...svc,
    metadata: { ...svc.metadata, annotations, finalizers: (svc.metadata?.finalizers ?? []).filter((f) => f !== Finalizers.LB_CLEANUP) },
  };
}

/** Whether the Service lacks the record of `maker` (a classed load balancer's annotations) that the finalizer write must add. */
export function needsMakerRecord(svc: V1Service, maker: LbMaker): boolean {
  const want = makerAnnotations(maker);
  if (!want) return false;
  const a = svc.metadata?.annotations ?? {};
  return Object.entries(want).some(([k, v]) => a[k] !== v);
}
