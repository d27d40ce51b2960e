/**
 * Wires the node IPAM controller into the host (registry.ts). As upstream's
 * CCM nodeipam, it is enabled by `*` but runs only with
 * --allocate-node-cidrs=true (config.ts then requires --cluster-cidr and
 * checks the mask sizes and --cidr-allocator-type=RangeAllocator).
 */
import type { ControllerFactory } from '../context.js';
import { parseClusterCidrs } from '../route/route-controller.js';
import { IpamController } from './ipam-controller.js';

export const startNodeIpamController: ControllerFactory = (ctx) => {
  if (!ctx.config.allocateNodeCidrs) return { skip: '--allocate-node-cidrs=false' };
  const controller = new IpamController({
    core: ctx.clients.core,
    nodes: ctx.informers.nodes(),
    recorder: ctx.recorder,
    log: ctx.log,
    registry: ctx.registry,
    clusterCidrs: parseClusterCidrs(ctx.config.clusterCidrs),
    maskSizes: ctx.config.nodeCidrMaskSizes,
  });
  return { run: (signal) => controller.run(signal) };
};
