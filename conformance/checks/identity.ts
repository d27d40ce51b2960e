/** IdentityService and LifecycleService.Configure checks. */
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import {
  Capability,
  Service,
  type GetPluginCapabilitiesResponse,
  type GetPluginInfoResponse,
  type GetProviderSchemaResponse,
} from '../../proto/gen/ccm/provider/v1/identity.js';
import { AnnotationSchema } from '../../host/plugin/provider-schema.js';
import { ServiceRef } from '../../proto/gen/ccm/provider/v1/load_balancers.js';
import { lbDeclarationProblems } from '../../host/lb-classes.js';
import { parseLabelSelector } from '../../host/ownership/selector.js';
import { ErrorReason, SUPPORTED_PROTOCOL_VERSIONS } from '../../sdk/protocol.js';
import { CheckFailed, expect, skip, type Check, type Kit } from '../kit.js';
import { Code, RpcError } from '../rpc.js';
import { PROVIDER_ID_PREFIX } from './common.js';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** Prefixes Kubernetes reserves for its own components (labels, annotations, and so class names too). */
const RESERVED_PREFIX = /^(.+\.)?(kubernetes\.io|k8s\.io)\//;

/**
 * Why a provider's load balancer class declaration (load_balancer_classes,
 * load_balancer_classes_only) is inconsistent, every problem: what the host
 * refuses (host/lb-classes.ts) and what it would accept but never use as meant.
 */
export function lbClassDeclarationProblems(caps: GetPluginCapabilitiesResponse): string[] {
  const classes = caps.loadBalancerClasses ?? [];
  const only = caps.loadBalancerClassesOnly ?? false;
  const problems = lbDeclarationProblems(caps.providerName, { classes, unclassed: !only });
  if (!caps.services.includes(Service.SERVICE_LOAD_BALANCERS))
    problems.push(
      `load_balancer_classes${only ? '/load_balancer_classes_only' : ''} declared without SERVICE_LOAD_BALANCERS: the host sends Services only to a load-balancer provider; declare the service or none of the classes`,
    );
  if (only && classes.length === 0)
    problems.push(
      'load_balancer_classes_only is set with no load_balancer_classes: the provider would serve no Service at all; list the classes it serves, or drop load_balancer_classes_only',
    );
  for (const cls of classes) {
    if (!cls.includes('/'))
      problems.push(
        `load balancer class ${JSON.stringify(cls)} has no prefix: unprefixed loadBalancerClass names are reserved for end users; use a domain of yours, e.g. "example.com/${cls}"`,
      );
    else if (RESERVED_PREFIX.test(cls))
      problems.push(
        `load balancer class ${JSON.stringify(cls)} is in a namespace Kubernetes reserves (kubernetes.io, k8s.io); use a domain of yours`,
      );
  }
  return problems;
}

/** Which service each capability belongs to. */
const CAPABILITY_SERVICE: Record<number, Service> = {
  [Capability.CAPABILITY_INSTANCES_BATCH]: Service.SERVICE_INSTANCES,
  [Capability.CAPABILITY_INSTANCES_LEGACY]: Service.SERVICE_INSTANCES,
  [Capability.CAPABILITY_LOAD_BALANCER_BATCH_HOSTS]: Service.SERVICE_LOAD_BALANCERS,
  [Capability.CAPABILITY_LOAD_BALANCER_IP_MODE_PROXY]: Service.SERVICE_LOAD_BALANCERS,
  [Capability.CAPABILITY_LOAD_BALANCER_LIST]: Service.SERVICE_LOAD_BALANCERS,
  [Capability.CAPABILITY_LOAD_BALANCER_BATCH_ENSURE]: Service.SERVICE_LOAD_BALANCERS,
  [Capability.CAPABILITY_ROUTES_RECONCILE]: Service.SERVICE_ROUTES,
  [Capability.CAPABILITY_VOLUMES_LIST_PUBLISHED_NODES]: Service.SERVICE_VOLUMES,
  [Capability.CAPABILITY_VOLUMES_EXPAND_ONLINE]: Service.SERVICE_VOLUMES,
};

/** One cheap call per service, to see that an undeclared service answers UNIMPLEMENTED. */
export function probeCall(k: Kit, s: Service): [object, string, object] | undefined {
  const c = k.rpc.conn;
  const meta = k.meta();
  switch (s) {
    case Service.SERVICE_INSTANCES:
      return [c.instances, 'InstanceExists', { meta, node: k.nodeRef(`${k.prefix}-absent`) }];
    case Service.SERVICE_ZONES:
      return [c.zones, 'GetZone', { meta }];
    case Service.SERVICE_CLUSTERS:
      return [c.clusters, 'ListClusters', { meta }];
    case Service.SERVICE_LOAD_BALANCERS:
      return [
        c.loadBalancers,
        'GetLoadBalancerName',
        // fromPartial fills every repeated and map field: the generated encoder iterates them unchecked.
        { meta, service: ServiceRef.fromPartial({ uid: '00000000-0000-0000-0000-000000000000', namespace: 'default', name: 'x' }) },
      ];
    case Service.SERVICE_ROUTES:
      return [c.routes, 'ListRoutes', { meta, pageSize: 1, pageToken: '' }];
    case Service.SERVICE_VOLUMES:
      return [c.volumes, 'ListVolumes', { meta, pageSize: 1, pageToken: '' }];
    default:
      return undefined;
  }
}

export const identityChecks: Check[] = [
  {
    id: 'identity/plugin-info',
    title:
      'GetPluginInfo names the provider, its version and the negotiated protocol, and echoes the launch nonce (a per-process id in sidecar mode)',
    run: async (k) => {
      const info = await k.rpc.call<GetPluginInfoResponse>(k.rpc.conn.identity, 'GetPluginInfo', {});
      k.info = info;
      expect(info.name.length > 0, 'name is empty');
      expect(info.vendorVersion.length > 0, 'vendor_version is empty');
      expect(
        SUPPORTED_PROTOCOL_VERSIONS.includes(info.protocolVersion),
        `protocol_version ${info.protocolVersion} is not one the host speaks (${SUPPORTED_PROTOCOL_VERSIONS.join(',')})`,
      );
      if (k.handshakeLine) {
        const hs = Number(k.handshakeLine.split('|')[2]);
        expect(info.protocolVersion === hs, `protocol_version ${info.protocolVersion} differs from the handshake's ${hs}`);
      }
      if (k.proc)
        expect(
          info.instanceId === k.proc.instanceId,
          `instance_id ${JSON.stringify(info.instanceId)} does not echo CCM_PLUGIN_INSTANCE_ID ${JSON.stringify(k.proc.instanceId)}`,
        );
      else {
        expect(
          info.instanceId !== '',
          'instance_id is empty: in sidecar mode report an id generated at process start (e.g. a random UUID), so the host can tell a restarted provider and configure it again',
        );
        const again = await k.rpc.call<GetPluginInfoResponse>(k.rpc.conn.identity, 'GetPluginInfo', {});
        expect(
          again.instanceId === info.instanceId,
          `instance_id changed from ${JSON.stringify(info.instanceId)} to ${JSON.stringify(again.instanceId)}; it must stay the same for the life of the process`,
        );
      }
    },
  },
  {
    id: 'identity/capabilities',
    title: 'GetPluginCapabilities is valid, consistent and stable',
    run: async (k) => {
      const caps = await k.rpc.call<GetPluginCapabilitiesResponse>(k.rpc.conn.identity, 'GetPluginCapabilities', {});
      k.capsValue = caps;
      expect(DNS_LABEL.test(caps.providerName), `provider_name ${JSON.stringify(caps.providerName)} is not a lowercase DNS label`);
      expect(!caps.services.includes(Service.SERVICE_UNSPECIFIED), 'services lists SERVICE_UNSPECIFIED');
      expect(!caps.capabilities.includes(Capability.CAPABILITY_UNSPECIFIED), 'capabilities lists CAPABILITY_UNSPECIFIED');
      expect(new Set(caps.services).size === caps.services.length, 'services has duplicates');
      expect(new Set(caps.capabilities).size === caps.capabilities.length, 'capabilities has duplicates');
      for (const c of caps.capabilities) {
        const s = CAPABILITY_SERVICE[c];
        expect(
          s === undefined || caps.services.includes(s),
          `capability ${Capability[c]} is declared without its service ${s === undefined ? '' : Service[s]}`,
        );
      }
      // Node ownership (provider_id_prefixes, node_selector): the host refuses a plugin with an invalid prefix.
      for (const p of caps.providerIdPrefixes ?? [])
        expect(PROVIDER_ID_PREFIX.test(p), `provider_id_prefixes has ${JSON.stringify(p)}, which is not "<scheme>://" (lowercase, e.g. "aws://")`);
      expect(new Set(caps.providerIdPrefixes ?? []).size === (caps.providerIdPrefixes ?? []).length, 'provider_id_prefixes has duplicates');
      const again = await k.rpc.call<GetPluginCapabilitiesResponse>(k.rpc.conn.identity, 'GetPluginCapabilities', {});
      expect(
        JSON.stringify(again) === JSON.stringify(caps),
        'a second GetPluginCapabilities answered differently; the answer must not change during the life of the process',
      );
    },
  },
  {
    id: 'identity/load-balancer-classes',
    title:
      'the load balancer classes declared (load_balancer_classes, load_balancer_classes_only) are valid loadBalancerClass values with a prefix of the provider (not unprefixed, not kubernetes.io/k8s.io), none twice, declared with SERVICE_LOAD_BALANCERS, and _only with at least one class',
    run: async (k) => {
      if ((k.caps.loadBalancerClasses ?? []).length === 0 && !k.caps.loadBalancerClassesOnly)
        skip('the provider declares no load balancer class (it serves Services without a class only)');
      const problems = lbClassDeclarationProblems(k.caps);
      expect(problems.length === 0, problems.join('; '));
    },
  },
  {
    id: 'identity/node-selector',
    title: 'node_selector, when declared, is a label selector the host can use (kubectl -l syntax: k=v, k!=v, k, !k, k in (a,b), k notin (a,b))',
    run: async (k) => {
      const selector = k.caps.nodeSelector ?? '';
      if (selector.trim() === '') skip('the provider declares no node_selector');
      try {
        parseLabelSelector(selector);
      } catch (err) {
        throw new CheckFailed(
          `node_selector ${JSON.stringify(selector)} is not a label selector (${(err as Error).message}): the host refuses the plugin at start-up`,
        );
      }
    },
  },
  {
    id: 'identity/provider-schema',
    title:
      'with CAPABILITY_PROVIDER_SCHEMA, GetProviderSchema answers a schema the host can use (at most 1 MiB, every entry typed, enums with values, patterns that compile, no key twice) and the same answer twice',
    run: async (k) => {
      if (!k.caps.capabilities.includes(Capability.CAPABILITY_PROVIDER_SCHEMA)) skip('the provider publishes no schema');
      const schema = await k.rpc.call<GetProviderSchemaResponse>(k.rpc.conn.identity, 'GetProviderSchema', {});
      const compiled = AnnotationSchema.compile(schema);
      expect(!('problem' in compiled), `the host ignores this schema: ${'problem' in compiled ? compiled.problem : ''}`);
      const again = await k.rpc.call<GetProviderSchemaResponse>(k.rpc.conn.identity, 'GetProviderSchema', {});
      expect(
        JSON.stringify(again) === JSON.stringify(schema),
        'a second GetProviderSchema answered differently; the answer must not change during the life of the process',
      );
    },
  },
  {
    id: 'lifecycle/not-configured',
    title:
      'before Configure, a call of every declared cloud service answers FAILED_PRECONDITION with reason NOT_CONFIGURED, and Probe answers ready=false',
    run: async (k) => {
      const services = k.caps.services.filter((s) => probeCall(k, s) !== undefined);
      if (services.length === 0) skip('the provider declares no cloud service');
      for (const service of services) {
        const [client, method, req] = probeCall(k, service)!;
        let err: RpcError;
        try {
          err = await k.rpc.callError(client, method, req);
        } catch {
          const fresh = k.exec ? '' : ' (in sidecar mode, run the kit against a freshly started provider that no host has configured)';
          throw new CheckFailed(
            `${method} succeeded before Configure; answer FAILED_PRECONDITION with ErrorInfo reason ${ErrorReason.NOT_CONFIGURED} until the first Configure, so a restarted provider never answers from an empty state${fresh}`,
          );
        }
        expect(
          err.code === Code.FAILED_PRECONDITION && err.reason === ErrorReason.NOT_CONFIGURED,
          `${method} (${Service[service]}) before Configure: want FAILED_PRECONDITION with ErrorInfo reason ${ErrorReason.NOT_CONFIGURED}, got ${err.message} (reason ${err.reason ?? 'none'})`,
        );
      }
      const probe = await k.rpc.call<{ ready: boolean }>(k.rpc.conn.identity, 'Probe', {});
      expect(!probe.ready, 'Probe answered ready=true before Configure; answer ready=false until the provider is configured');
    },
  },
  {
    id: 'lifecycle/bad-config',
    title: 'Configure with a config the provider cannot use (--bad-cloud-config) answers INVALID_ARGUMENT and leaves it unconfigured',
    run: async (k) => {
      const bad = k.opts.badCloudConfig;
      if (!bad) skip('pass --bad-cloud-config FILE with bytes your provider must refuse');
      const err = await k.rpc
        .callError(k.rpc.conn.lifecycle, 'Configure', {
          cloudConfig: bad,
          clusterName: k.cluster,
          clusterUid: k.clusterUid,
          hostVersion: 'ccm-provider-conformance',
          providerArgs: [],
          controllers: [],
        })
        .catch(() => {
          throw new CheckFailed('Configure accepted the bad cloud config; answer INVALID_ARGUMENT for a config that cannot be used');
        });
      expect(err.code === Code.INVALID_ARGUMENT, `Configure with the bad cloud config: want INVALID_ARGUMENT, got ${err.message}`);
      const service = k.caps.services.find((s) => probeCall(k, s) !== undefined);
      if (service !== undefined) {
        const [client, method, req] = probeCall(k, service)!;
        const after = await k.rpc.callError(client, method, req).catch(() => {
          throw new CheckFailed(`${method} succeeded after a failed Configure; the provider must stay unconfigured (NOT_CONFIGURED)`);
        });
        expect(
          after.code === Code.FAILED_PRECONDITION && after.reason === ErrorReason.NOT_CONFIGURED,
          `${method} after a failed Configure: want FAILED_PRECONDITION/${ErrorReason.NOT_CONFIGURED}, got ${after.message}`,
        );
      }
      const probe = await k.rpc.call<{ ready: boolean }>(k.rpc.conn.identity, 'Probe', {});
      expect(!probe.ready, 'Probe answered ready=true after a failed Configure');
    },
  },
  {
    id: 'lifecycle/configure',
    title: 'Configure accepts the cloud config, and a second identical call is a no-op',
    run: async (k) => {
      const req = {
        cloudConfig: k.opts.cloudConfig,
        clusterName: k.cluster,
        clusterUid: k.clusterUid,
        hostVersion: 'ccm-provider-conformance',
        providerArgs: [],
        controllers: [],
      };
      await k.rpc.call(k.rpc.conn.lifecycle, 'Configure', req);
      await k.rpc.call(k.rpc.conn.lifecycle, 'Configure', req);
    },
  },
  {
    id: 'identity/probe',
    title: 'Probe reports ready (polled within the start timeout)',
    run: async (k) => {
      const deadline = Date.now() + k.opts.startTimeoutMs;
      for (;;) {
        const r = await k.rpc.call<{ ready: boolean }>(k.rpc.conn.identity, 'Probe', {});
        if (r.ready) return;
        expect(Date.now() < deadline, `Probe still says ready=false after ${k.opts.startTimeoutMs} ms`);
        await delay(200);
      }
    },
  },
  {
    // Protocol 1.1: the host sends W3C trace context in the metadata of every call; a provider may ignore it, never refuse it.
    id: 'identity/trace-context',
    title:
      'a call carrying W3C trace context (traceparent, tracestate) is answered as usual; with an OTLP receiver, the server span continues the trace',
    run: async (k) => {
      const traceId = randomBytes(16).toString('hex');
      const spanId = randomBytes(8).toString('hex');
      for (const [what, metadata] of [
        ['a valid traceparent', { traceparent: `00-${traceId}-${spanId}-01`, tracestate: 'ccm-conformance=1' }],
        ['a malformed traceparent', { traceparent: 'not-a-traceparent' }],
      ] as const) {
        try {
          await k.rpc.call(k.rpc.conn.identity, 'Probe', {}, undefined, metadata);
        } catch (err) {
          expect(false, `Probe with ${what} in the metadata failed (${(err as Error).message}): trace context must never fail a call`);
        }
      }
      const spans = k.opts.traceSpans;
      if (!spans) return; // No receiver: answering is all the protocol asks.
      // Batch exporters send within OTEL_BSP_SCHEDULE_DELAY (5 s by default).
      const deadline = Date.now() + 10_000;
      let inTrace = spans().filter((s) => s.traceId === traceId);
      while (!inTrace.some((s) => s.parentSpanId === spanId) && Date.now() < deadline) {
        await delay(200);
        inTrace = spans().filter((s) => s.traceId === traceId);
      }
      if (inTrace.length === 0) skip('the provider exported no span of the trace within 10 s (a provider may ignore traces)');
      expect(
        inTrace.some((s) => s.parentSpanId === spanId),
        `the provider's spans of the trace (${inTrace.length}) have no span whose parent is the caller's span ${spanId}: continue the traceparent from the metadata`,
      );
    },
  },
  {
    id: 'identity/undeclared-unimplemented',
    title: 'services the provider does not declare answer UNIMPLEMENTED',
    run: async (k) => {
      const undeclared = [
        Service.SERVICE_INSTANCES,
        Service.SERVICE_ZONES,
        Service.SERVICE_CLUSTERS,
        Service.SERVICE_LOAD_BALANCERS,
        Service.SERVICE_ROUTES,
        Service.SERVICE_VOLUMES,
      ].filter((s) => !k.caps.services.includes(s));
      if (undeclared.length === 0) skip('every service is declared');
      for (const s of undeclared) {
        const [client, method, req] = probeCall(k, s)!;
        try {
          await k.rpc.call(client, method, req);
        } catch (err) {
          expect(
            err instanceof RpcError && err.code === Code.UNIMPLEMENTED,
            `${Service[s]} is not declared, but ${method} failed with ${(err as Error).message} instead of UNIMPLEMENTED`,
          );
          continue;
        }
        expect(false, `${Service[s]} is not declared, but ${method} succeeded; declare the service or answer UNIMPLEMENTED`);
      }
    },
  },
];
