/**
 * Nodes for tests against the shared API server: labelled with the test's
 * own `--node-selector` label (other test files' hosts must never see them),
 * and without a kubelet, so the test sets the Ready condition itself.
 */
import { randomBytes } from 'node:crypto';
import type { CoreV1Api, CoreV1Event, V1Node, V1NodeCondition } from '@kubernetes/client-node';
import { patchNodeStatus } from './kube-patch.js';
import { waitFor } from './wait.js';

/** A unique label for one test host: pass `selector` to --node-selector and `labels` to every node. */
export function testScope(prefix: string): { key: string; value: string; selector: string; labels: Record<string, string>; prefix: string } {
  const value = `${prefix}-${randomBytes(4).toString('hex')}`;
  const key = 'ccm-test-scope';
  return { key, value, selector: `${key}=${value}`, labels: { [key]: value }, prefix: value };
}

export interface TestNodeOptions {
  labels: Record<string, string>;
  podCidrs?: string[];
  /** Sets the Ready condition after creating the node (status subresource). */
  ready?: boolean;
  taints?: { key: string; value?: string; effect: string }[];
  /** spec.providerID at creation (a Node a host would otherwise see for a moment without one). */
  providerId?: string;
}

export async function createTestNode(core: CoreV1Api, name: string, o: TestNodeOptions): Promise<V1Node> {
  const node = await core.createNode({
    body: {
      metadata: { name, labels: { ...o.labels, 'kubernetes.io/hostname': name } },
      spec: {
        ...(o.podCidrs ? { podCIDR: o.podCidrs[0], podCIDRs: o.podCidrs } : {}),
        ...(o.taints ? { taints: o.taints } : {}),
        ...(o.providerId ? { providerID: o.providerId } : {}),
      },
    },
  });
  if (o.ready !== undefined) return setReady(core, name, o.ready);
  return node;
}

/** Sets the Ready condition, as a kubelet would. */
export async function setReady(core: CoreV1Api, name: string, ready: boolean): Promise<V1Node> {
  const now = new Date().toISOString();
  const cond: V1NodeCondition = {
    type: 'Ready',
    status: ready ? 'True' : 'False',
    reason: ready ? 'KubeletReady' : 'KubeletNotReady',
    message: ready ? 'kubelet is posting ready status' : 'test says not ready',
    lastHeartbeatTime: now as unknown as Date,
    lastTransitionTime: now as unknown as Date,
  };
  return patchNodeStatus(core, name, { status: { conditions: [cond] } }, 'strategic');
}

export function condition(node: V1Node, type: string): V1NodeCondition | undefined {
  return (node.status?.conditions ?? []).find((c) => c.type === type);
}

export const hasTaint = (node: V1Node, key: string) => (node.spec?.taints ?? []).some((t) => t.key === key);

/** Events about the named node (cluster-scoped objects' events live in `default`). */
export async function nodeEvents(core: CoreV1Api, name: string): Promise<CoreV1Event[]> {
  const list = await core.listNamespacedEvent({ namespace: 'default', fieldSelector: `involvedObject.name=${name}` });
  return list.items;
}

/** Reads a node; undefined when it does not exist. */
export async function readNodeOrUndefined(core: CoreV1Api, name: string): Promise<V1Node | undefined> {
  try {
    return await core.readNode({ name });
  } catch (err) {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  }
}

/** Deletes every node with the scope label. */
export async function deleteScopedNodes(core: CoreV1Api, selector: string): Promise<void> {
  await core.deleteCollectionNode({ labelSelector: selector }).catch(() => undefined);
}

/** The taint a kubelet with --cloud-provider=external registers its Node with, until a cloud-node controller initializes it. */
export const UNINITIALIZED_TAINT = 'node.cloudprovider.kubernetes.io/uninitialized';

/** Registers a Ready Node as kubelet --cloud-provider=external would: no providerID, the uninitialized taint. */
export function createExternalNode(core: CoreV1Api, name: string, labels: Record<string, string>): Promise<V1Node> {
  return createTestNode(core, name, { labels, ready: true, taints: [{ key: UNINITIALIZED_TAINT, value: 'true', effect: 'NoSchedule' }] });
}

/** Waits until the Node lost the uninitialized taint (a cloud-node controller initialized it) and returns it. */
export function waitNodeInitialized(core: CoreV1Api, name: string, by: string, timeoutMs = 180_000): Promise<V1Node> {
  return waitFor(
    async () => {
      const n = await core.readNode({ name });
      return hasTaint(n, UNINITIALIZED_TAINT) ? undefined : n;
    },
    { what: `node ${name} initialized by ${by}`, timeoutMs },
  );
}
