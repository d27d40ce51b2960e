/**
 * The allowed differences between upstream's cloud controllers and our host,
 * one row each of docs/upstream-parity.md (same ids, same order; a unit test
 * checks they agree, test/unit/parity). The differential suite fails on any
 * difference no row allows and on any row no difference needed. Values are
 * after normalization (test/helpers/parity.ts): `parity-<side>-…` names.
 */
import type { AllowedDifference } from '../../helpers/parity.js';

export const ALLOWED: readonly AllowedDifference[] = [
  {
    // The node whose init failed (provided-node-ip the cloud does not report) is uninitialized: ours leaves it out.
    id: 'uninitialized-not-backend',
    // Every load balancer made while that node is uninitialized (web, and the provider-error scenarios' Services).
    path: /^cloud\/lb\/[^/]+\/backends$/,
    ours: /^(?!.*parity-<side>-provided-hostname=)/,
    upstream: /parity-<side>-provided-hostname=127\.0\.40\.5/,
    // Otherwise the same backends: ours is upstream's list without that node.
    relation: (ours, upstream) =>
      ours ===
      upstream
        ?.split(', ')
        .filter((b) => !b.startsWith('parity-<side>-provided-hostname='))
        .join(', '),
  },
  {
    id: 'failed-to-sync-node-event',
    // The provided IP the cloud does not report, and the instance metadata read answered NotFound or Unimplemented.
    path: /^event\/Node\/parity-<side>-(provided-hostname|md-notfound|md-unimpl)\/FailedToSyncNode$/,
    ours: /^Warning from cloud-node-controller: failed to initialize node: (node IP 127\.0\.40\.9 \(from --node-ip\) is not among the addresses the cloud reports for this node|GetInstancesMetadata: injected \(fail knob\): instances\.getInstancesMetadata on parity-<side>-md-(notfound|unimpl))$/,
    upstream: null,
  },
  {
    id: 'batched-reads',
    path: /^cloud\/reads$/,
    ours: /^instance metadata, instance status$/,
    upstream: /^instance metadata, instance status, load balancer status, route list$/,
  },
  {
    // ImplementedElsewhere: no load balancer was made; at deletion upstream's GetLoadBalancer finds none and calls nothing.
    id: 'delete-without-status-read',
    path: /^cloud\/calls\/elsewhere$/,
    ours: /^delete \(failed\), ensure \(failed\)$/,
    upstream: /^ensure \(failed\)$/,
  },
  {
    id: 'deleting-event-without-status-read',
    path: /^event\/Service\/elsewhere\/DeletingLoadBalancer$/,
    ours: /^Normal from service-controller: Deleting load balancer$/,
    upstream: null,
  },
];
