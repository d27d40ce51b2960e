/**
 * Shared fixtures for the local cloud tests: a temporary state directory, a
 * call context, and full protocol messages with defaults.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import type { NodeRef, RequestMeta } from '../../../proto/gen/ccm/provider/v1/common.js';
import { Protocol, type ServicePort, type ServiceRef } from '../../../proto/gen/ccm/provider/v1/load_balancers.js';
import type { CallContext } from '../../../sdk/provider.js';
import { createLocalCloud, type LocalCloud, type LocalCloudOptions } from '../../../plugins/local/cloud.js';

/** A fresh temporary directory removed when the test ends. */
export async function tempDir(t: ExecutionContext, prefix = 'localcloud-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A local cloud on a fresh state dir, isolated from the runner's environment. */
export async function newCloud(t: ExecutionContext, opts: LocalCloudOptions = {}): Promise<LocalCloud> {
  return createLocalCloud({ stateDir: await tempDir(t), env: {}, ...opts });
}

/** A call context that is never aborted (or aborted by `controller`). */
export function ctx(controller = new AbortController()): CallContext {
  return { signal: controller.signal };
}

/** RequestMeta for `cluster` (and its cluster UID). */
export function meta(cluster = 'test-cluster', clusterUid = 'uid-of-test-cluster'): RequestMeta {
  return { operationId: '', clusterName: cluster, clusterUid, attempt: 1 };
}

/** A NodeRef with only a name and/or providerID set. */
export function node(name: string, providerId = ''): NodeRef {
  return { name, providerId, addresses: [], labels: {}, uid: '', annotations: {}, podCidrs: [], taints: [], unschedulable: false, conditions: [] };
}

/** A TCP ServicePort. */
export function port(p: number, nodePort: number): ServicePort {
  return { name: `p${p}`, protocol: Protocol.PROTOCOL_TCP, port: p, nodePort, appProtocol: '', targetPort: 0, targetPortName: '' };
}

/** A LoadBalancer Service with one port unless overridden. */
export function service(uid: string, overrides: Partial<ServiceRef> = {}): ServiceRef {
  return {
    uid,
    namespace: 'default',
    name: `svc-${uid.slice(0, 8)}`,
    annotations: {},
    labels: {},
    ports: [port(80, 30080)],
    loadBalancerIp: '',
    loadBalancerSourceRanges: [],
    ipFamilies: [],
    externalTrafficPolicy: 0,
    healthCheckNodePort: 0,
    sessionAffinity: 0,
    loadBalancerClass: '',
    sessionAffinityTimeoutSeconds: 0,
    selector: {},
    clusterIps: [],
    ipFamilyPolicy: 0,
    externalIps: [],
    internalTrafficPolicy: 0,
    endpoints: [],
    ...overrides,
  };
}
