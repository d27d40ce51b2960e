/**
 * Validation of routes a provider answers (ListRoutes, CreateRoute,
 * ReconcileRoutes). A route the host cannot interpret (its destination is not
 * a CIDR, an address has an unknown type) makes the whole answer invalid: the
 * route controller then changes nothing rather than deleting on bad data.
 */
import type { NodeAddressType } from '../cloud.js';
import type { Route as PbRoute } from '../../proto/gen/ccm/provider/v1/routes.js';
import { parseCidr } from '../util/cidr.js';
import { MAX_ADDRESSES, printableIdProblem, quote } from './validate.js';

/** Longest accepted route name or target node name. */
const MAX_NAME_CHARS = 1024;

/** The route's canonical destination CIDR, or its problems. */
export function routeProblems(r: PbRoute, addressTypes: ReadonlyMap<number, NodeAddressType>): { cidr: string } | { problems: string[] } {
  const problems: string[] = [];
  const cidr = parseCidr(r.destinationCidr);
  if (!cidr) problems.push(`destination_cidr ${quote(r.destinationCidr)} is not a CIDR`);
  // Both reach logs and Events, and target_node is compared with Node names: printable ASCII only.
  for (const [what, v] of [
    ['route name', r.name],
    ['target_node', r.targetNode],
  ] as const) {
    const p = v === '' ? undefined : printableIdProblem(what, v, MAX_NAME_CHARS);
    if (p) problems.push(p);
  }
  if (r.targetNodeAddresses.length > MAX_ADDRESSES) problems.push(`more than ${MAX_ADDRESSES} target node addresses`);
  const badTypes = r.targetNodeAddresses.filter((a) => !addressTypes.has(a.type)).length;
  if (badTypes) problems.push(`${badTypes} target node address(es) with unknown or unspecified type`);
  return problems.length || !cidr ? { problems } : { cidr: cidr.text };
}
