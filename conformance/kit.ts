/**
 * The conformance run: a shared context for the checks (the provider process
 * or endpoint, clients, capabilities, hooks, and everything the kit created
 * so it can be removed), and the loop that runs checks in order, turning
 * SkipCheck into "skip" and any other error into "fail".
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Capability, Service, type GetPluginCapabilitiesResponse, type GetPluginInfoResponse } from '../proto/gen/ccm/provider/v1/identity.js';
import type { NodeRef } from '../proto/gen/ccm/provider/v1/common.js';
import type { ServiceRef } from '../proto/gen/ccm/provider/v1/load_balancers.js';
import type { Route } from '../proto/gen/ccm/provider/v1/routes.js';
import type { TestHooks } from './hooks.js';
import type { Launched } from './launch.js';
import type { CheckResult } from './report.js';
import type { Rpc } from './rpc.js';

/** Where the provider under test comes from. */
export type TargetSpec = { kind: 'exec'; path: string; env: readonly string[] } | { kind: 'endpoint'; endpoint: string };

export interface KitOptions {
  target: TargetSpec;
  /** Bytes handed to Configure. */
  cloudConfig: Buffer;
  /** Bytes the provider must refuse in Configure (INVALID_ARGUMENT, staying unconfigured); lifecycle/bad-config is skipped without. */
  badCloudConfig?: Buffer;
  /** --test-hook-command; otherwise the provider's TestHooksService is used if served. */
  hookCommand?: string;
  /** Bound for the handshake and for Probe to report ready. */
  startTimeoutMs: number;
  /** Grace period sent with Shutdown. */
  shutdownGraceMs: number;
  /** Only checks whose id matches run (others are skipped). */
  focus?: RegExp;
  /**
   * The spans an OTLP receiver got from the provider so far (optional): with
   * it, identity/trace-context also checks that the provider's server span
   * continues the caller's trace. The caller points the provider's
   * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT at that receiver.
   */
  traceSpans?: () => readonly { traceId: string; spanId: string; parentSpanId: string }[];
  /** Called with each result as it is known. */
  onResult?: (r: CheckResult) => void;
}

/** Thrown by a check that does not apply to this provider. */
class SkipCheck extends Error {
  override name = 'SkipCheck';
}

export function skip(reason: string): never {
  throw new SkipCheck(reason);
}

/** A failed expectation. */
export class CheckFailed extends Error {
  override name = 'CheckFailed';
}

export function expect(cond: unknown, message: string): asserts cond {
  if (!cond) throw new CheckFailed(message);
}

/** One check. */
export interface Check {
  id: string;
  title: string;
  run(k: Kit): Promise<void>;
}

/** The instance the kit created through the hook, as InstanceMetadata described it. */
export interface TestNode {
  name: string;
  providerId: string;
  zone: string;
  region: string;
  instanceType: string;
}

/** Everything the kit made in the cloud, for cleanup and the leftovers check. */
export interface Created {
  instances: Map<string, string>; // node name → providerID
  loadBalancers: Map<string, ServiceRef>; // uid → service
  routes: Map<string, Route>; // destination → route
  volumes: Map<string, string>; // volume id → name
}

export class Kit {
  /** Unique prefix of every name the kit uses (a DNS label). */
  readonly prefix = `cct${randomBytes(3).toString('hex')}`;
  /** RequestMeta.cluster_name of every call: keeps the kit's routes apart. */
  readonly cluster = `ccm-conformance-${randomBytes(3).toString('hex')}`;
  /** RequestMeta.cluster_uid of every call (a kube-system Namespace uid stands for the cluster). */
  readonly clusterUid = randomUUID();
  readonly created: Created = { instances: new Map(), loadBalancers: new Map(), routes: new Map(), volumes: new Map() };
  proc?: Launched;
  rpcValue?: Rpc;
  handshakeLine?: string;
  info?: GetPluginInfoResponse;
  capsValue?: GetPluginCapabilitiesResponse;
  hooksValue?: TestHooks;
  hooksProblem = 'no test hook: pass --test-hook-command, or serve ccm.provider.testing.v1.TestHooksService when CCM_PROVIDER_TEST_HOOKS=1';
  /** Instance the kit created through the hook, once instances/test-instance ran. */
  testNode?: TestNode;

  constructor(readonly opts: KitOptions) {}

  get exec(): boolean {
    return this.opts.target.kind === 'exec';
  }

  /** Request meta of every call. */
  meta(operation = ''): { operationId: string; clusterName: string; clusterUid: string; attempt: number } {
    return { operationId: operation ? `${this.prefix}-${operation}` : '', clusterName: this.cluster, clusterUid: this.clusterUid, attempt: 1 };
  }

  get rpc(): Rpc {
    if (!this.rpcValue) skip('no connection to the provider (see launch/handshake)');
    return this.rpcValue;
  }

  get caps(): GetPluginCapabilitiesResponse {
    if (!this.capsValue) skip('capabilities unknown (see identity/capabilities)');
    return this.capsValue;
  }

  get hooks(): TestHooks {
    if (!this.hooksValue) skip(this.hooksProblem);
    return this.hooksValue;
  }

  needExec(): void {
    if (!this.exec) skip('applies to exec mode (--plugin-path) only');
  }

  needService(s: Service): void {
    if (!this.caps.services.includes(s)) skip(`provider does not declare ${Service[s]}`);
  }

  needCapability(c: Capability): void {
    if (!this.caps.capabilities.includes(c)) skip(`provider does not declare ${Capability[c]}`);
  }

  needTestNode(): TestNode {
    if (!this.testNode) skip('needs the test instance (see instances/test-instance)');
    return this.testNode;
  }

  /**
   * A NodeRef for the test instance, by name, as the host sends a just
   * registered node: the uninitialized taint, a Ready condition, a pod CIDR,
   * the kubelet's versions. The machine's own identifiers (systemUUID,
   * machineID, bootID) stay empty: the kit cannot know the test instance's,
   * and a made-up one could send a provider that looks instances up by them
   * to the wrong machine.
   */
  nodeRef(name: string, providerId = ''): NodeRef {
    return {
      name,
      providerId,
      addresses: [],
      labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64' },
      uid: '',
      annotations: { 'node.alpha.kubernetes.io/ttl': '0', 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
      podCidrs: ['10.244.7.0/24'],
      taints: [{ key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' }],
      unschedulable: false,
      conditions: [
        { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory' },
        { type: 'Ready', status: 'True', reason: 'KubeletReady' },
      ],
      nodeInfo: {
        machineId: '',
        systemUuid: '',
        bootId: '',
        kernelVersion: '6.8.0-1017-generic',
        osImage: 'Ubuntu 24.04.1 LTS',
        containerRuntimeVersion: 'containerd://2.1.0',
        kubeletVersion: 'v1.34.4',
        operatingSystem: 'linux',
        architecture: 'amd64',
      },
    };
  }
}

/** Checks that set up what others need: they run even when --focus leaves them out. */
const PREREQUISITES = new Set([
  'launch/handshake',
  'setup/hooks',
  'identity/capabilities',
  'lifecycle/configure',
  'identity/probe',
  'instances/test-instance',
  'cleanup/no-leftovers',
  'lifecycle/shutdown',
]);

/** Runs `checks` in order against one provider; never throws. */
export async function runChecks(k: Kit, checks: readonly Check[]): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const c of checks) {
    const started = Date.now();
    let r: CheckResult;
    if (k.opts.focus && !k.opts.focus.test(c.id) && !PREREQUISITES.has(c.id)) {
      r = { id: c.id, title: c.title, outcome: 'skip', message: 'not selected by --focus', durationMs: 0 };
    } else {
      try {
        await c.run(k);
        r = { id: c.id, title: c.title, outcome: 'pass', durationMs: Date.now() - started };
      } catch (err) {
        const skipped = err instanceof SkipCheck;
        r = {
          id: c.id,
          title: c.title,
          outcome: skipped ? 'skip' : 'fail',
          message: err instanceof Error ? err.message : String(err),
          durationMs: Date.now() - started,
        };
      }
    }
    results.push(r);
    k.opts.onResult?.(r);
  }
  return results;
}
