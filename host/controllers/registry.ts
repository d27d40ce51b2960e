/**
 * The controllers this build implements, by canonical name. Adding a
 * controller = one entry here (plus its name in host/names.ts).
 */
import type { ControllerName } from '../names.js';
import type { ControllerFactory, ControllerPreflight } from './context.js';
import { startNodeLifecycleController } from './lifecycle/start.js';
import { startNodeIpamController } from './nodeipam/start.js';
import { startCloudNodeController } from './node/start.js';
import { routePreflight, startRouteController } from './route/start.js';
import { startServiceController } from './service/start.js';
import { startPvLabelController, startVolumeAttacher, startVolumeProvisioner, startVolumeResizer } from './volume/start.js';

export const CONTROLLER_FACTORIES: Partial<Record<ControllerName, ControllerFactory>> = {
  'cloud-node-controller': startCloudNodeController,
  'cloud-node-lifecycle-controller': startNodeLifecycleController,
  'service-lb-controller': startServiceController,
  'node-route-controller': startRouteController,
  'node-ipam-controller': startNodeIpamController,
  'volume-provisioner-controller': startVolumeProvisioner,
  'volume-attacher-controller': startVolumeAttacher,
  'volume-resizer-controller': startVolumeResizer,
  'persistentvolume-label-controller': startPvLabelController,
};

/** Start-up checks of controllers whose misconfiguration must stop the host (run for enabled controllers only). */
export const CONTROLLER_PREFLIGHTS: Partial<Record<ControllerName, ControllerPreflight>> = {
  'node-route-controller': routePreflight,
};
