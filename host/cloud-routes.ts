/**
 * The Routes capability (upstream cloudprovider.Routes): cloud routes that
 * send each node's pod CIDRs to that node. Implemented over gRPC by
 * host/plugin/grpc-routes.ts; every answer is validated before it is
 * returned. Errors as in host/cloud.ts.
 */
import type { NodeAddress } from './cloud.js';

/** A route as the cloud reports it (validated). */
export interface CloudRoute {
  /** Provider-assigned name; what deleteRoute identifies the route by. */
  name: string;
  /** Name of the Node receiving the traffic. */
  targetNode: string;
  targetNodeAddresses: NodeAddress[];
  /** Destination CIDR, canonical (network address, no host bits). */
  destinationCidr: string;
  /** The target no longer exists in the cloud; such routes are deleted. */
  blackhole: boolean;
}

/** A route that should exist. */
export interface DesiredRoute {
  targetNode: string;
  targetNodeAddresses: NodeAddress[];
  /** Canonical CIDR. */
  destinationCidr: string;
}

/** Outcome of one batch reconcile (validated). */
export interface RouteReconcileResult {
  created: CloudRoute[];
  deleted: CloudRoute[];
  /** Desired routes that could not be created (or routes that could not be deleted), each with its error. */
  failed: { route: DesiredRoute; error: Error }[];
}

/**
 * Route table of one cluster (`clusterName` = --cluster-name on every call).
 */
export interface Routes {
  /** Every route of the cluster, all pages. Read-only. */
  listRoutes(clusterName: string): Promise<CloudRoute[]>;
  /**
   * Creates a route. Idempotent: an identical existing route is success; a
   * route for the same destination to another node rejects (ALREADY_EXISTS).
   * `nameHint` (upstream: the node UID) may become part of the cloud name.
   */
  createRoute(clusterName: string, nameHint: string, route: DesiredRoute): Promise<CloudRoute>;
  /** Deletes a route as listRoutes returned it. Idempotent: absent is success. */
  deleteRoute(clusterName: string, route: CloudRoute): Promise<void>;
  /**
   * Makes the cluster's routes inside `clusterCidrs` equal to `desired` in
   * one call (creates missing ones, deletes others inside the CIDRs, blackholes
   * too; routes outside are left alone). Idempotent. Only when `batched`.
   */
  reconcileRoutes(clusterName: string, desired: DesiredRoute[], clusterCidrs: readonly string[]): Promise<RouteReconcileResult>;
  /** Whether the provider has the batch ReconcileRoutes RPC. */
  readonly batched: boolean;
}
