/**
 * What a controller gets from the host when it starts: configuration, the
 * cloud's capabilities, API clients, shared informers, its own logger and
 * event recorder, and metrics. Controllers are registered in registry.ts.
 */
import type { Registry } from 'prom-client';
import type { Cloud } from '../cloud.js';
import type { HostConfig } from '../config/config.js';
import type { KubeClients } from '../kube/client.js';
import type { EventRecorder } from '../kube/events.js';
import type { InformerFactory } from '../kube/informer-factory.js';
import type { Logger } from '../log.js';
import type { HostMetrics } from '../metrics.js';
import type { ControllerName } from '../names.js';
import type { PluginSupervisor } from '../plugin/supervisor.js';
import type { ProviderRegistry } from '../providers.js';
import type { RequestAuth } from '../server/delegated-auth.js';
import type { WebhookServer } from '../server/webhooks.js';
import type { HostNodeOwnership } from '../ownership/host.js';

export interface ControllerContext {
  name: ControllerName;
  config: HostConfig;
  /** The default provider's Cloud and supervisor: `providers.default.cloud` / `.supervisor`. */
  cloud: Cloud;
  supervisor: PluginSupervisor;
  /**
   * Every provider of the host (host/providers.ts): `providers.list()` gives
   * each one's name, Cloud and capabilities(); `forProviderId(node.spec.providerID)`
   * the one that owns a Node by its providerID scheme.
   */
  providers: ProviderRegistry;
  /** Clients for the controller's own reads and writes (--kube-api-qps/burst). */
  clients: KubeClients;
  informers: InformerFactory;
  /** Event recorder with this controller's upstream component name, on its own client. */
  recorder: EventRecorder;
  log: Logger;
  metrics: HostMetrics;
  registry: Registry;
  /**
   * Which provider owns each Node (host/ownership): controllers acting on
   * Nodes send each only to its owner and leave the others alone.
   */
  nodeOwnership: HostNodeOwnership;
  /** Delegated authentication and authorization for servers the controller runs (the PV label webhook); built on first call. */
  requestAuth: () => Promise<RequestAuth>;
  /** The host's admission webhook server (--webhook-secure-port), shared by the controllers that serve a webhook. */
  webhooks: WebhookServer;
}

/** A controller the host runs until the signal aborts. */
export interface RunnableController {
  /** Runs until `signal` aborts; waits for informer sync itself. */
  run(signal: AbortSignal): Promise<void>;
  /** For /readyz: false when the controller is stuck. */
  healthy?(): boolean;
  /**
   * For /readyz: why the controller, though running, does not do all of its
   * job (e.g. the webhook it serves could not bind its port); undefined when
   * nothing is wrong. Read on every readiness check, so it must be cheap.
   */
  problem?(): string | undefined;
}

/**
 * Creates a controller, or returns a one-line reason why it cannot run with
 * this cloud/configuration (the host logs it and does not start it).
 */
export type ControllerFactory = (ctx: ControllerContext) => RunnableController | { skip: string };

/**
 * Checks, before leader election, whether a controller's configuration can
 * work with these providers; throws HostStartError (one line) when it cannot.
 */
export type ControllerPreflight = (config: HostConfig, providers: ProviderRegistry) => void;
