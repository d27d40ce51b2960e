/**
 * Load balancers by class (issue 31, item 3): which of a host's
 * load-balancer providers serves a Service, by its spec.loadBalancerClass.
 *
 * Each provider declares the classes it serves and whether it also serves
 * Services without a class (GetPluginCapabilitiesResponse
 * load_balancer_classes and load_balancer_classes_only). A provider that
 * declares nothing serves Services without a class only: what the upstream
 * service controller and every provider before these fields do.
 *
 * The rules over a host's providers (lbClassProblems; the host refuses to
 * start on any): every class a valid loadBalancerClass, no class declared
 * twice (by one provider or by two), at most one provider serving Services
 * without a class. Then each Service has at most one provider
 * (LbClassResolver.forService), and a Service no provider serves is left
 * alone entirely.
 */
import type { V1Service } from '@kubernetes/client-node';

/** What one provider declares it serves. */
export interface LbClassDeclaration {
  /** spec.loadBalancerClass values served. */
  classes: readonly string[];
  /** Whether Services without a loadBalancerClass are served too. */
  unclassed: boolean;
}

/** The declaration as the protocol carries it (GetPluginCapabilitiesResponse fields 7 and 8). */
export function lbClassDeclaration(caps: { loadBalancerClasses?: readonly string[]; loadBalancerClassesOnly?: boolean }): LbClassDeclaration {
  return { classes: [...(caps.loadBalancerClasses ?? [])], unclassed: !(caps.loadBalancerClassesOnly ?? false) };
}

/** A load-balancer provider as the resolver sees it: a unique name (recorded on the Services it serves) and its declaration. */
export interface LbClassProvider {
  name: string;
  classes: LbClassDeclaration;
}

/** Most characters of a DNS subdomain (the class prefix) and of a qualified name's name part (Kubernetes ValidateQualifiedName). */
const MAX_PREFIX = 253;
const MAX_NAME = 63;
const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why `cls` is not a valid loadBalancerClass (a Kubernetes qualified name), or undefined. */
export function lbClassProblem(cls: string): string | undefined {
  const slash = cls.indexOf('/');
  const prefix = slash >= 0 ? cls.slice(0, slash) : undefined;
  const name = slash >= 0 ? cls.slice(slash + 1) : cls;
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > MAX_PREFIX || !SUBDOMAIN.test(prefix)))
    return `load balancer class ${JSON.stringify(cls)}: the prefix must be a DNS subdomain of at most ${MAX_PREFIX} characters`;
  if (name.length === 0 || name.length > MAX_NAME || !NAME.test(name))
    return `load balancer class ${JSON.stringify(cls)}: the name must be at most ${MAX_NAME} characters of [A-Za-z0-9-_.], starting and ending alphanumeric`;
  return undefined;
}

/** Problems of one provider's own declaration (invalid or repeated classes), each a line. */
export function lbDeclarationProblems(provider: string, d: LbClassDeclaration): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const cls of d.classes) {
    const p = lbClassProblem(cls);
    if (p) problems.push(`provider ${provider}: ${p}`);
    if (seen.has(cls)) problems.push(`provider ${provider} declares load balancer class ${JSON.stringify(cls)} twice`);
    seen.add(cls);
  }
  return problems;
}

/**
 * Every problem of a host's load-balancer providers' declarations at once
 * (empty = fine): each provider's own (lbDeclarationProblems), a class two
 * providers declare, more than one provider serving Services without a
 * class. Pass only providers that serve load balancers (SERVICE_LOAD_BALANCERS).
 */
export function lbClassProblems(providers: readonly LbClassProvider[]): string[] {
  const problems: string[] = [];
  const names = new Set<string>();
  const byClass = new Map<string, string[]>();
  for (const p of providers) {
    if (names.has(p.name)) problems.push(`two load-balancer providers are named ${JSON.stringify(p.name)}`);
    names.add(p.name);
    problems.push(...lbDeclarationProblems(p.name, p.classes));
    for (const cls of new Set(p.classes.classes)) byClass.set(cls, [...(byClass.get(cls) ?? []), p.name]);
  }
  for (const [cls, who] of byClass)
    if (who.length > 1)
      problems.push(`load balancer class ${JSON.stringify(cls)} is declared by several providers (${who.join(', ')}); give each class one provider`);
  const unclassed = providers.filter((p) => p.classes.unclassed).map((p) => p.name);
  if (unclassed.length > 1)
    problems.push(
      `several providers serve Services without a loadBalancerClass (${unclassed.join(', ')}); at most one may: set load_balancer_classes_only on the others`,
    );
  return problems;
}

/** The Service's loadBalancerClass ('' for none). */
export function classOf(svc: V1Service): string {
  return svc.spec?.loadBalancerClass ?? '';
}

/**
 * The provider of each class, over a valid set of declarations. Immutable:
 * the declarations are fixed for the life of a provider process.
 */
export class LbClassResolver<P extends LbClassProvider = LbClassProvider> {
  private readonly byClass = new Map<string, P>();
  private readonly byName = new Map<string, P>();
  private readonly unclassedProvider?: P;

  /** Throws with every problem (lbClassProblems) when the declarations conflict. */
  constructor(readonly providers: readonly P[]) {
    const problems = lbClassProblems(providers);
    if (problems.length) throw new Error(`invalid load balancer class declarations: ${problems.join('; ')}`);
    for (const p of providers) {
      this.byName.set(p.name, p);
      for (const cls of p.classes.classes) this.byClass.set(cls, p);
    }
    this.unclassedProvider = providers.find((p) => p.classes.unclassed);
  }

  /** The provider serving class `cls` ('' = Services without a class), or undefined: nobody here serves it. */
  forClass(cls: string): P | undefined {
    return cls === '' ? this.unclassedProvider : this.byClass.get(cls);
  }

  /** The provider serving a Service of type LoadBalancer by its class; undefined for other types and unserved classes. */
  forService(svc: V1Service): P | undefined {
    return svc.spec?.type === 'LoadBalancer' ? this.forClass(classOf(svc)) : undefined;
  }

  /** The provider named `name`, or undefined. */
  named(name: string): P | undefined {
    return this.byName.get(name);
  }

  /** The provider of Services without a class, if any. */
  get unclassed(): P | undefined {
    return this.unclassedProvider;
  }
}
