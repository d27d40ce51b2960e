/**
 * Node controllers with several providers (issue 31 items 2 and 5): the
 * cloud node and node lifecycle controllers run one instance per provider,
 * each with that provider's Cloud, its own work queue, workers, passes and
 * deletion brake, and an ownership gate naming that provider. Every instance
 * sees every Node; its gate admits only the Nodes its provider owns (the
 * declarations of all providers, host/ownership), so each Node's cloud calls
 * go to its owner only, batch calls (instancesStatus) are per provider, and
 * a provider that is down or hangs stalls only its own instance.
 *
 * With one provider this is exactly the single controller of before: same
 * log fields, same ownership name (the provider_name), no provider label.
 */
import type { Logger } from '../log.js';
import type { Provider } from '../providers.js';
import type { OwnershipSource } from '../ownership/gate.js';
import { ownershipOf } from '../ownership/gate.js';
import type { ControllerContext, RunnableController } from './context.js';

/** One provider as a per-provider controller instance sees it. */
export interface ProviderView {
  provider: Provider;
  /** The controller's logger, with `provider` when the host has several. */
  log: Logger;
  /** Whose Nodes this instance acts on: the provider's name in the declarations. */
  ownership: OwnershipSource;
  /** Whether the host has several providers (names in records that must stay as before with one). */
  several: boolean;
}

/**
 * Runs `make` once per provider and returns one controller running them all.
 * A provider `make` skips (e.g. no instances service) is logged and left
 * out; when every provider is skipped, so is the controller (the first
 * reason). Healthy only while every instance is healthy.
 */
export function perProvider(
  ctx: ControllerContext,
  make: (view: ProviderView) => RunnableController | { skip: string },
): RunnableController | { skip: string } {
  const list = ctx.providers.list();
  const several = list.length > 1;
  const made: RunnableController[] = [];
  const skipped: string[] = [];
  for (const provider of list) {
    const view: ProviderView = several
      ? {
          provider,
          log: ctx.log.child({ provider: provider.name }),
          ownership: { provider: () => provider.name, declarations: () => ctx.nodeOwnership.declarations() },
          several,
        }
      : { provider, log: ctx.log, ownership: ownershipOf(ctx), several };
    const r = make(view);
    if ('skip' in r) {
      skipped.push(several ? `provider ${provider.name}: ${r.skip}` : r.skip);
      if (several) view.log.warn({ reason: r.skip }, 'not running the controller for this provider (its Nodes are left alone)');
    } else made.push(r);
  }
  if (made.length === 0) return { skip: skipped[0] ?? 'no provider' };
  return joinControllers(made);
}

/**
 * One controller running several instances (one per provider, or per
 * provider and provisioner): each stops on its own when the signal aborts,
 * one failing does not stop the others (what they act on is theirs); run
 * rejects with the first failure once all have ended. Healthy only while
 * every instance is healthy. One instance is returned as it is.
 */
export function joinControllers(made: readonly RunnableController[]): RunnableController {
  if (made.length === 1) return made[0]!;
  return {
    run: async (signal) => {
      const results = await Promise.allSettled(made.map((m) => m.run(signal)));
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    },
    healthy: () => made.every((m) => m.healthy?.() ?? true),
    problem: () => made.map((m) => m.problem?.()).find((p) => p !== undefined),
  };
}
