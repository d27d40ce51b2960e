/**
 * Test hosts share one API server, so a host that runs a controller acting on
 * Nodes must see only its own (`--node-selector`): otherwise its events and
 * writes land on other test files' nodes, and their assertions (a
 * FailedToSyncNode Warning, a NetworkUnavailable condition) can pass because
 * of it while their own host is broken. Every host helper on the shared
 * control plane checks this before starting the host.
 */
import { parseHostArgs } from '../../host/config/flags.js';
import type { HostConfig } from '../../host/config/config.js';
import { Controllers, type ControllerName } from '../../host/names.js';

/** Controllers that write to Nodes or file events on them. */
const NODE_CONTROLLERS: readonly ControllerName[] = [
  Controllers.CLOUD_NODE,
  Controllers.CLOUD_NODE_LIFECYCLE,
  Controllers.NODE_ROUTE,
  Controllers.NODE_IPAM,
];

/** Throws when `config` runs a node controller without --node-selector. */
export function assertNodeScoped(config: Pick<HostConfig, 'enabledControllers' | 'nodeSelector'>): void {
  if (config.nodeSelector) return;
  const unscoped = config.enabledControllers.filter((c) => NODE_CONTROLLERS.includes(c));
  if (unscoped.length > 0) {
    throw new Error(
      `a test host on the shared API server runs ${unscoped.join(', ')} without --node-selector: give it a selector of its own (testScope() in test/helpers/nodes.ts), or --controllers without node controllers`,
    );
  }
}

/** assertNodeScoped for host command-line arguments (flag errors are left to the host). */
export function assertArgsNodeScoped(args: string[]): void {
  const parsed = parseHostArgs(args);
  if ('config' in parsed) assertNodeScoped(parsed.config);
}
