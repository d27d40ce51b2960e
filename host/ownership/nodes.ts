/**
 * Node ownership (issue 31 item 2; KEP-5778, kubernetes/enhancements#5778):
 * which provider a Node belongs to, as a pure function of the Node and the
 * providers' declarations. The cloud node, node lifecycle and route
 * controllers send a Node only to its owner; a Node no provider owns, or
 * that two providers claim, is left alone (never initialized, tainted,
 * deleted or given a route).
 *
 * Rules:
 * - a Node with a providerID belongs to the providers one of whose prefixes
 *   it starts with (a prefix is `<scheme>://`, so at most one prefix string
 *   can match; two providers declaring it are a conflict);
 * - a Node without a providerID belongs to the providers whose selector its
 *   labels match; a provider with no selector claims every such Node when it
 *   is the host's only provider (today's behaviour) and none when there are
 *   several;
 * - no claimant: none; one: owned; two or more: conflict (names sorted).
 *
 * Wiring several providers: build the declarations of all of them with
 * `nodeOwnershipDeclarations([...])` (each provider's capabilities plus the
 * operator's override, if any) and give the list to `resolveNodeOwner`.
 */
import { parseLabelSelector, selectorMatches, type LabelSelector } from './selector.js';

/** One provider's declarations as they arrive (GetPluginCapabilitiesResponse fields 3, 5, 6, or an operator override). */
export interface NodeOwnershipInput {
  /** The provider's name in this host (its configured name; with one provider, its provider_name). Reported in conflicts. */
  name: string;
  /** GetPluginCapabilitiesResponse.provider_name: the default prefix is `<providerName>://`. */
  providerName: string;
  /** Declared providerID prefixes; empty = [`<providerName>://`]. */
  providerIdPrefixes: readonly string[];
  /** Declared selector for Nodes without a providerID; '' = see the module rules. */
  nodeSelector: string;
}

/** Which Nodes without a providerID a provider claims. */
export type UnidentifiedClaim = { kind: 'all' } | { kind: 'none' } | { kind: 'selector'; selector: LabelSelector };

/** One provider's resolved declarations (defaults applied, selector parsed). */
export interface NodeOwnershipDeclaration {
  name: string;
  /** Never empty. */
  prefixes: readonly string[];
  unidentified: UnidentifiedClaim;
}

/** The answer for one Node. */
export type NodeOwner = { kind: 'owned'; provider: string } | { kind: 'none' } | { kind: 'conflict'; providers: string[] };

/** What of a Node ownership reads (a V1Node's spec.providerID and metadata.labels). */
export interface OwnedNode {
  spec?: { providerID?: string };
  metadata?: { labels?: Record<string, string> };
}

/** A providerID prefix: a URL-like scheme and "://" (e.g. "aws://", "hrobot://"). */
const PREFIX = /^[a-z0-9]([-a-z0-9.+]*[a-z0-9])?:\/\/$/;

/** Why `prefix` is not a valid providerID prefix, or undefined. */
export function prefixProblem(prefix: string): string | undefined {
  return PREFIX.test(prefix) ? undefined : `providerID prefix ${JSON.stringify(prefix)} is not "<scheme>://" (lowercase, e.g. "aws://")`;
}

/**
 * Resolves the declarations of the host's providers (all of them: the
 * empty-selector rule depends on how many there are). Throws one Error
 * listing every problem (bad prefix, bad selector) at once.
 */
export function nodeOwnershipDeclarations(inputs: readonly NodeOwnershipInput[]): NodeOwnershipDeclaration[] {
  const problems: string[] = [];
  const out = inputs.map((input): NodeOwnershipDeclaration => {
    const prefixes = input.providerIdPrefixes.length > 0 ? [...new Set(input.providerIdPrefixes)] : [`${input.providerName}://`];
    for (const p of prefixes) {
      const why = prefixProblem(p);
      if (why) problems.push(`provider ${input.name}: ${why}`);
    }
    let unidentified: UnidentifiedClaim = inputs.length === 1 ? { kind: 'all' } : { kind: 'none' };
    if (input.nodeSelector.trim() !== '') {
      try {
        unidentified = { kind: 'selector', selector: parseLabelSelector(input.nodeSelector) };
      } catch (err) {
        problems.push(`provider ${input.name}: node selector ${JSON.stringify(input.nodeSelector)} is invalid: ${(err as Error).message}`);
      }
    }
    return { name: input.name, prefixes, unidentified };
  });
  if (problems.length > 0) throw new Error(problems.join('; '));
  return out;
}

/** Who owns `node` (see the module rules). Pure. */
export function resolveNodeOwner(node: OwnedNode, declarations: readonly NodeOwnershipDeclaration[]): NodeOwner {
  const providerId = node.spec?.providerID ?? '';
  const labels = node.metadata?.labels ?? {};
  const claimants = declarations
    .filter((d) =>
      providerId !== ''
        ? d.prefixes.some((p) => providerId.startsWith(p))
        : d.unidentified.kind === 'all' || (d.unidentified.kind === 'selector' && selectorMatches(d.unidentified.selector, labels)),
    )
    .map((d) => d.name);
  const names = [...new Set(claimants)].sort();
  if (names.length === 0) return { kind: 'none' };
  if (names.length === 1) return { kind: 'owned', provider: names[0]! };
  return { kind: 'conflict', providers: names };
}

/** Prefixes two or more providers declare (each is a conflict on every Node with it): prefix → provider names. */
export function sharedPrefixes(declarations: readonly NodeOwnershipDeclaration[]): Map<string, string[]> {
  const by = new Map<string, string[]>();
  for (const d of declarations) for (const p of d.prefixes) by.set(p, [...(by.get(p) ?? []), d.name]);
  return new Map([...by].filter(([, names]) => names.length > 1));
}

/**
 * Why a provider's own declarations (GetPluginCapabilitiesResponse fields 5
 * and 6) cannot be used, or undefined: the supervisor refuses such a plugin
 * at start-up with one line.
 */
export function nodeOwnershipProblem(caps: {
  providerName: string;
  providerIdPrefixes?: readonly string[];
  nodeSelector?: string;
}): string | undefined {
  try {
    nodeOwnershipDeclarations([
      {
        name: caps.providerName,
        providerName: caps.providerName,
        providerIdPrefixes: caps.providerIdPrefixes ?? [],
        nodeSelector: caps.nodeSelector ?? '',
      },
    ]);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/**
 * The Nodes a load-balancer provider gets as backends, of `eligible` (the
 * service controller's eligible Nodes): with one provider in the host
 * (declarations of one), all of them, exactly as upstream; with several,
 * those `provider` owns and those no provider owns. A Node another provider
 * owns, or that several claim, is never sent: a provider maps what it can of
 * any providerID (cloud-provider-aws keeps its last path segment, so a
 * foreign Node whose providerID ends in one of its instance ids would be
 * registered with its load balancers). Pure; keeps the order of `eligible`.
 */
export function lbBackendsOf<N extends OwnedNode>(eligible: readonly N[], provider: string, declarations: readonly NodeOwnershipDeclaration[]): N[] {
  if (declarations.length <= 1) return [...eligible];
  return eligible.filter((n) => {
    const owner = resolveNodeOwner(n, declarations);
    return owner.kind === 'none' || (owner.kind === 'owned' && owner.provider === provider);
  });
}
