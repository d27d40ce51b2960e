/**
 * For the node ownership tests (one provider: ownership/foreign-nodes, two:
 * multi-provider/node-owners): what a host could have changed on a Node, the
 * Events this project's controllers wrote about it, and how many lifecycle
 * passes and route reconciles have run, so a test can wait for many of them
 * and then see a Node nobody owns untouched.
 */
import type { CoreV1Api, V1Node } from '@kubernetes/client-node';
import type { HostMetrics } from '../../host/metrics.js';
import { EventComponents } from '../../host/names.js';
import { localcloud } from './localcloud.js';
import { condition, hasTaint, nodeEvents, UNINITIALIZED_TAINT } from './nodes.js';

export const SHUTDOWN_TAINT = 'node.cloudprovider.kubernetes.io/shutdown';
/** The label by which the tests' local clouds claim Nodes without a providerID (their node selectors). */
export const CLOUD_LABEL = 'ccm-test-cloud';

const OUR_COMPONENTS = new Set<string>(Object.values(EventComponents));

/** Completed lifecycle passes of every provider (the pass duration histogram's count). */
export async function lifecyclePasses(host: { metrics: HostMetrics }): Promise<number> {
  const m = await host.metrics.registry.getSingleMetric('ccm_node_lifecycle_pass_duration_seconds')!.get();
  return m.values.find((v) => (v as { metricName?: string }).metricName === 'ccm_node_lifecycle_pass_duration_seconds_count')?.value ?? 0;
}

/** Completed route reconciles. */
export async function routeSyncs(host: { metrics: HostMetrics }): Promise<number> {
  const m = await host.metrics.registry.getSingleMetric('route_controller_route_sync_total')!.get();
  return m.values.reduce((n, v) => n + v.value, 0);
}

/** The routes a local cloud holds for cluster `cluster`. */
export async function cloudRoutes(state: string, cluster = 'test'): Promise<{ targetNode: string; destinationCidr: string }[]> {
  return JSON.parse(await localcloud(state, 'route', 'list', '--cluster', cluster, '-o', 'json')) as {
    targetNode: string;
    destinationCidr: string;
  }[];
}

/** What a host could have changed on a Node: its taints of ours, providerID, the labels and addresses it sets, NetworkUnavailable. */
export function footprint(n: V1Node) {
  return {
    uninitialized: hasTaint(n, UNINITIALIZED_TAINT),
    shutdown: hasTaint(n, SHUTDOWN_TAINT),
    providerID: n.spec?.providerID,
    zone: n.metadata?.labels?.['topology.kubernetes.io/zone'],
    instanceType: n.metadata?.labels?.['node.kubernetes.io/instance-type'],
    addresses: n.status?.addresses,
    networkUnavailable: condition(n, 'NetworkUnavailable')?.status,
  };
}

/** The Events this project's controllers wrote about Node `name`, as `reason: message`. */
export async function ourNodeEvents(core: CoreV1Api, name: string): Promise<string[]> {
  return (await nodeEvents(core, name))
    .filter((e) => OUR_COMPONENTS.has(e.source?.component ?? e.reportingComponent ?? ''))
    .map((e) => `${e.reason}: ${e.message}`);
}
