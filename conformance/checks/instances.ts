/** InstancesService checks (NOT_FOUND/INSTANCE_NOT_FOUND semantics, batch shape). */
import type { NodeRef } from '../../proto/gen/ccm/provider/v1/common.js';
import { Capability, Service } from '../../proto/gen/ccm/provider/v1/identity.js';
import type {
  GetInstancesMetadataResponse,
  GetInstancesStatusResponse,
  InstanceMetadataResponse,
} from '../../proto/gen/ccm/provider/v1/instances.js';
import { ErrorReason } from '../../sdk/protocol.js';
import { expect, type Check } from '../kit.js';
import { Code, RpcError } from '../rpc.js';
import { addressProblem, declaredPrefixes, expectCode, expectItemInstanceNotFound, instanceAbsent } from './common.js';

export const instanceChecks: Check[] = [
  {
    id: 'instances/absent',
    title: 'an absent instance: InstanceExists false, InstanceShutdown (unless UNIMPLEMENTED) and InstanceMetadata NOT_FOUND/INSTANCE_NOT_FOUND',
    run: async (k) => {
      k.needService(Service.SERVICE_INSTANCES);
      const i = k.rpc.conn.instances;
      const byName = k.nodeRef(`${k.prefix}-absent`);
      const byId = k.nodeRef(`${k.prefix}-absent`, `${k.caps.providerName}://${k.prefix}-absent-id`);
      for (const node of [byName, byId]) {
        expect(
          await instanceAbsent(k, node),
          `InstanceExists says an instance ${node.providerId ? `with providerID ${node.providerId}` : `named ${node.name}`} exists`,
        );
        // UNIMPLEMENTED is a valid answer: the host reads it as "not shut down" (docs/protocol.md, Errors).
        const shutdown = await k.rpc.callError(i, 'InstanceShutdown', { meta: k.meta(), node }).catch(() => undefined);
        if (shutdown?.code !== Code.UNIMPLEMENTED)
          await expectCode(k, i, 'InstanceShutdown', { meta: k.meta(), node }, Code.NOT_FOUND, ErrorReason.INSTANCE_NOT_FOUND);
        await expectCode(k, i, 'InstanceMetadata', { meta: k.meta(), node }, Code.NOT_FOUND, ErrorReason.INSTANCE_NOT_FOUND);
      }
    },
  },
  {
    id: 'instances/foreign-provider-id',
    title:
      "a node with another provider's providerID is never reported gone: no exists=false and no NOT_FOUND (INVALID_ARGUMENT is the expected answer)",
    run: async (k) => {
      k.needService(Service.SERVICE_INSTANCES);
      const i = k.rpc.conn.instances;
      const owned = declaredPrefixes(k.caps);
      const other = ['othercloud', 'anothercloud', 'thirdcloud'].find((s) => !owned.includes(`${s}://`))!;
      const node = k.nodeRef(`${k.prefix}-foreign`, `${other}://${k.prefix}-foreign-id`);
      const gone = (method: string, what: string) =>
        `${method} for a node with providerID ${node.providerId} answered ${what}: that means "gone" and makes the host delete the Node; answer INVALID_ARGUMENT for another provider's providerID`;
      for (const method of ['InstanceExists', 'InstanceShutdown', 'InstanceMetadata']) {
        try {
          const r = await k.rpc.call<{ exists?: boolean }>(i, method, { meta: k.meta(), node });
          expect(!(method === 'InstanceExists' && r.exists === false), gone(method, 'exists=false'));
        } catch (err) {
          if (!(err instanceof RpcError)) throw err;
          expect(err.code !== Code.NOT_FOUND, gone(method, err.message));
        }
      }
      if (!k.caps.capabilities.includes(Capability.CAPABILITY_INSTANCES_BATCH)) return;
      const r = await k.rpc.call<GetInstancesStatusResponse>(i, 'GetInstancesStatus', { meta: k.meta(), nodes: [node] });
      expect(r.results.length === 1, `GetInstancesStatus answered ${r.results.length} results for 1 node`);
      const item = r.results[0]!;
      if (item.error && item.error.code !== Code.OK) expect(item.error.code !== Code.NOT_FOUND, gone('GetInstancesStatus', 'a per-item NOT_FOUND'));
      else expect(item.exists, gone('GetInstancesStatus', 'exists=false'));
    },
  },
  {
    id: 'instances/test-instance',
    title: 'a test instance made by the hook is found by node name and by providerID, with valid metadata',
    run: async (k) => {
      k.needService(Service.SERVICE_INSTANCES);
      const name = `${k.prefix}-node-a`;
      const hookId = await k.hooks.createInstance(name);
      k.created.instances.set(name, hookId);
      const i = k.rpc.conn.instances;
      const md = (await k.rpc.call<InstanceMetadataResponse>(i, 'InstanceMetadata', { meta: k.meta(), node: k.nodeRef(name) })).metadata;
      expect(md, 'InstanceMetadata answered without metadata');
      expect(md.providerId === hookId, `providerID ${JSON.stringify(md.providerId)} differs from the hook's ${JSON.stringify(hookId)}`);
      // Its prefix against the declared ones: instances/provider-id-prefix.
      expect(/^[a-z0-9][-a-z0-9.+]*:\/\/.+/.test(md.providerId), `providerID ${JSON.stringify(md.providerId)} is not "<scheme>://<id>"`);
      expect(md.nodeAddresses.length <= 64, `${md.nodeAddresses.length} addresses; at most 64`);
      const keys = new Set<string>();
      for (const a of md.nodeAddresses) {
        const problem = addressProblem(a);
        expect(!problem, problem!);
        expect(!keys.has(`${a.type}/${a.address}`), `duplicate address ${a.address}`);
        keys.add(`${a.type}/${a.address}`);
      }
      for (const key of Object.keys(md.additionalLabels)) {
        expect(!/(^|\.)(kubernetes\.io|k8s\.io)\//.test(key), `additional label ${key} is in a reserved namespace`);
      }
      const again = (await k.rpc.call<InstanceMetadataResponse>(i, 'InstanceMetadata', { meta: k.meta(), node: k.nodeRef(name, md.providerId) }))
        .metadata;
      expect(again?.providerId === md.providerId, 'InstanceMetadata by providerID found another instance');
      k.testNode = { name, providerId: md.providerId, zone: md.zone, region: md.region, instanceType: md.instanceType };
    },
  },
  {
    id: 'instances/provider-id-prefix',
    title:
      'the providerIDs InstanceMetadata answers (single and batch) start with a prefix the provider declares (provider_id_prefixes, default <provider_name>://), so the host sends it its own Nodes',
    run: async (k) => {
      k.needService(Service.SERVICE_INSTANCES);
      const t = k.needTestNode();
      const owned = declaredPrefixes(k.caps);
      const i = k.rpc.conn.instances;
      const answers: [string, string][] = [['InstanceMetadata by providerID', t.providerId]];
      const byName = await k.rpc.call<InstanceMetadataResponse>(i, 'InstanceMetadata', { meta: k.meta(), node: k.nodeRef(t.name) });
      answers.push(['InstanceMetadata by name', byName.metadata?.providerId ?? '']);
      if (k.caps.capabilities.includes(Capability.CAPABILITY_INSTANCES_BATCH)) {
        const r = await k.rpc.call<GetInstancesMetadataResponse>(i, 'GetInstancesMetadata', { meta: k.meta(), nodes: [k.nodeRef(t.name)] });
        answers.push(['GetInstancesMetadata', r.results[0]?.metadata?.providerId ?? '']);
      }
      for (const [what, id] of answers) {
        expect(
          owned.some((p) => id.startsWith(p)),
          `${what} answered providerID ${JSON.stringify(id)}, which starts with none of the declared prefixes ${owned.map((p) => JSON.stringify(p)).join(', ')}: the host refuses it, and would never send the provider that Node again`,
        );
      }
    },
  },
  {
    id: 'instances/exists-and-shutdown',
    title: 'InstanceExists is true and InstanceShutdown false for the running test instance, by name and by providerID',
    run: async (k) => {
      const t = k.needTestNode();
      for (const node of [k.nodeRef(t.name), k.nodeRef(t.name, t.providerId)]) {
        expect(!(await instanceAbsent(k, node)), `InstanceExists says the test instance does not exist (${node.providerId || node.name})`);
        const r = await k.rpc.call<{ shutdown: boolean }>(k.rpc.conn.instances, 'InstanceShutdown', { meta: k.meta(), node });
        expect(r.shutdown === false, 'InstanceShutdown says the running test instance is shut down');
      }
    },
  },
  {
    id: 'instances/bare-node',
    title:
      'the running test instance is never reported gone for a NodeRef without the optional node fields (no nodeInfo, conditions, taints, pod CIDRs, annotations): a node the kubelet has not reported on yet',
    run: async (k) => {
      const t = k.needTestNode();
      const i = k.rpc.conn.instances;
      for (const node of [bareNodeRef(t.name), bareNodeRef(t.name, t.providerId)]) {
        const by = node.providerId ? `providerID ${node.providerId}` : `name ${node.name}`;
        expect(!(await instanceAbsent(k, node)), `InstanceExists for a bare NodeRef (by ${by}) says the test instance does not exist`);
        // Success, or an error that is not "gone" (a provider that needs a field may answer a retryable error).
        const err = await k.rpc.callError(i, 'InstanceMetadata', { meta: k.meta(), node }).catch(() => undefined);
        expect(err?.code !== Code.NOT_FOUND, `InstanceMetadata for a bare NodeRef (by ${by}) answered NOT_FOUND for the running test instance`);
      }
    },
  },
  {
    id: 'instances/batch-status',
    title: 'GetInstancesStatus answers one result per node, in input order, with per-item errors',
    run: async (k) => {
      k.needCapability(Capability.CAPABILITY_INSTANCES_BATCH);
      const t = k.needTestNode();
      const absent = `${k.prefix}-absent`;
      const nodes = [k.nodeRef(t.name), k.nodeRef(absent), k.nodeRef(t.name, t.providerId)];
      const r = await k.rpc.call<GetInstancesStatusResponse>(k.rpc.conn.instances, 'GetInstancesStatus', { meta: k.meta(), nodes });
      expect(r.results.length === 3, `${r.results.length} results for 3 nodes`);
      expect(
        r.results.map((x) => x.nodeName).join() === [t.name, absent, t.name].join(),
        `results are not in input order: ${r.results.map((x) => x.nodeName).join(', ')}`,
      );
      for (const idx of [0, 2])
        expect(
          !r.results[idx]!.error && r.results[idx]!.exists && !r.results[idx]!.shutdown,
          `result ${idx} for the running test instance: ${JSON.stringify(r.results[idx])}`,
        );
      const mid = r.results[1]!;
      if (mid.error) expectItemInstanceNotFound('GetInstancesStatus', mid.error);
      else expect(!mid.exists, 'GetInstancesStatus says an absent instance exists');
    },
  },
  {
    id: 'instances/batch-metadata',
    title: 'GetInstancesMetadata answers one result per node, in input order, absent ones NOT_FOUND/INSTANCE_NOT_FOUND',
    run: async (k) => {
      k.needCapability(Capability.CAPABILITY_INSTANCES_BATCH);
      const t = k.needTestNode();
      const absent = `${k.prefix}-absent`;
      const nodes = [k.nodeRef(absent), k.nodeRef(t.name)];
      const r = await k.rpc.call<GetInstancesMetadataResponse>(k.rpc.conn.instances, 'GetInstancesMetadata', { meta: k.meta(), nodes });
      expect(r.results.length === 2, `${r.results.length} results for 2 nodes`);
      expect(r.results[0]!.nodeName === absent && r.results[1]!.nodeName === t.name, 'results are not in input order');
      expectItemInstanceNotFound('GetInstancesMetadata', r.results[0]!.error);
      expect(
        !r.results[1]!.error && r.results[1]!.metadata?.providerId === t.providerId,
        `result for the test instance: ${JSON.stringify(r.results[1])}`,
      );
    },
  },
  {
    id: 'instances/batch-count',
    title:
      'batch calls answer exactly one result per requested node, in order, also when every node is absent (2 and 500 of them); no test hook needed',
    run: async (k) => {
      k.needCapability(Capability.CAPABILITY_INSTANCES_BATCH);
      const i = k.rpc.conn.instances;
      const two = [k.nodeRef(`${k.prefix}-absent-1`), k.nodeRef(`${k.prefix}-absent-2`, `${k.caps.providerName}://${k.prefix}-absent-2-id`)];
      const many = Array.from({ length: 500 }, (_, n) => k.nodeRef(`${k.prefix}-gone-${n}`));
      for (const nodes of [two, many]) {
        const names = nodes.map((n) => n.name);
        const status = await k.rpc.call<GetInstancesStatusResponse>(i, 'GetInstancesStatus', { meta: k.meta(), nodes });
        expect(
          status.results.length === nodes.length,
          `GetInstancesStatus answered ${status.results.length} results for ${nodes.length} absent nodes; answer one per requested node (exists=false or a per-item INSTANCE_NOT_FOUND), never leave absent ones out`,
        );
        expect(status.results.map((r) => r.nodeName).join() === names.join(), 'GetInstancesStatus results are not in request order');
        status.results.forEach((r, n) => {
          if (r.error && r.error.code !== Code.OK) expectItemInstanceNotFound(`GetInstancesStatus result ${n}`, r.error);
          else expect(!r.exists, `GetInstancesStatus says absent node ${r.nodeName} exists`);
        });
        const md = await k.rpc.call<GetInstancesMetadataResponse>(i, 'GetInstancesMetadata', { meta: k.meta(), nodes });
        expect(
          md.results.length === nodes.length,
          `GetInstancesMetadata answered ${md.results.length} results for ${nodes.length} absent nodes; answer one per requested node with a per-item INSTANCE_NOT_FOUND`,
        );
        expect(md.results.map((r) => r.nodeName).join() === names.join(), 'GetInstancesMetadata results are not in request order');
        md.results.forEach((r, n) => expectItemInstanceNotFound(`GetInstancesMetadata result ${n}`, r.error));
      }
    },
  },
  {
    id: 'instances/legacy',
    title:
      'with CAPABILITY_INSTANCES_LEGACY: InstanceId, NodeAddresses, InstanceType (by name and providerID) agree with InstanceMetadata; absent ones are NOT_FOUND/INSTANCE_NOT_FOUND',
    run: async (k) => {
      k.needCapability(Capability.CAPABILITY_INSTANCES_LEGACY);
      const i = k.rpc.conn.instances;
      const absent = `${k.prefix}-absent`;
      const absentId = `${k.caps.providerName}://${k.prefix}-absent-id`;
      await expectCode(k, i, 'InstanceId', { meta: k.meta(), nodeName: absent }, Code.NOT_FOUND, ErrorReason.INSTANCE_NOT_FOUND);
      await expectCode(k, i, 'NodeAddresses', { meta: k.meta(), nodeName: absent }, Code.NOT_FOUND, ErrorReason.INSTANCE_NOT_FOUND);
      await expectCode(k, i, 'NodeAddressesByProviderId', { meta: k.meta(), providerId: absentId }, Code.NOT_FOUND, ErrorReason.INSTANCE_NOT_FOUND);
      await expectCode(k, i, 'InstanceType', { meta: k.meta(), nodeName: absent }, Code.NOT_FOUND, ErrorReason.INSTANCE_NOT_FOUND);
      await expectCode(k, i, 'InstanceTypeByProviderId', { meta: k.meta(), providerId: absentId }, Code.NOT_FOUND, ErrorReason.INSTANCE_NOT_FOUND);
      const t = k.needTestNode();
      const id = (await k.rpc.call<{ instanceId: string }>(i, 'InstanceId', { meta: k.meta(), nodeName: t.name })).instanceId;
      expect(
        `${k.caps.providerName}://${id}` === t.providerId,
        `InstanceId answered ${JSON.stringify(id)}; "${k.caps.providerName}://" + it must be the providerID ${t.providerId} (answer the id without the prefix)`,
      );
      for (const [method, req] of [
        ['NodeAddresses', { meta: k.meta(), nodeName: t.name }],
        ['NodeAddressesByProviderId', { meta: k.meta(), providerId: t.providerId }],
      ] as const) {
        const r = await k.rpc.call<{ addresses: { type: number; address: string }[] }>(i, method, req);
        expect(r.addresses.length > 0 && r.addresses.length <= 64, `${method} answered ${r.addresses.length} addresses; want 1..64`);
        for (const a of r.addresses) {
          const problem = addressProblem(a);
          expect(!problem, `${method}: ${problem}`);
        }
      }
      for (const [method, req] of [
        ['InstanceType', { meta: k.meta(), nodeName: t.name }],
        ['InstanceTypeByProviderId', { meta: k.meta(), providerId: t.providerId }],
      ] as const) {
        const r = await k.rpc.call<{ instanceType: string }>(i, method, req);
        expect(
          r.instanceType === t.instanceType,
          `${method} answered ${JSON.stringify(r.instanceType)}, InstanceMetadata ${JSON.stringify(t.instanceType)}`,
        );
      }
    },
  },
  {
    id: 'instances/batch-limits',
    title: 'batch calls with more than 500 nodes answer INVALID_ARGUMENT; no nodes gives no results or INVALID_ARGUMENT',
    run: async (k) => {
      k.needCapability(Capability.CAPABILITY_INSTANCES_BATCH);
      const many = Array.from({ length: 501 }, (_, n) => k.nodeRef(`${k.prefix}-n${n}`));
      for (const method of ['GetInstancesStatus', 'GetInstancesMetadata']) {
        try {
          const r = await k.rpc.call<{ results: unknown[] }>(k.rpc.conn.instances, method, { meta: k.meta(), nodes: [] });
          expect(r.results.length === 0, `${method} with no nodes answered ${r.results.length} results`);
        } catch (err) {
          expect(
            err instanceof RpcError && err.code === Code.INVALID_ARGUMENT,
            `${method} with no nodes: ${(err as Error).message}; want no results or INVALID_ARGUMENT`,
          );
        }
        await expectCode(k, k.rpc.conn.instances, method, { meta: k.meta(), nodes: many }, Code.INVALID_ARGUMENT);
      }
    },
  },
];

/**
 * A NodeRef with only a name (and providerID), every optional field empty:
 * what an older host, or a Node before its kubelet reported, gives.
 */
function bareNodeRef(name: string, providerId = ''): NodeRef {
  return { name, providerId, addresses: [], labels: {}, uid: '', annotations: {}, podCidrs: [], taints: [], unschedulable: false, conditions: [] };
}
