/**
 * The controllers this build implements, by canonical name. Adding a
 * controller = one entry here (plus its name in host/names.ts).
 */
import type { ControllerName } from '../names.js';
import type { ControllerFactory } from './context.js';
import { startCloudNodeController } from './node/start.js';
import { startPvLabelController, startVolumeAttacher, startVolumeProvisioner, startVolumeResizer } from './volume/start.js';

export const CONTROLLER_FACTORIES: Partial<Record<ControllerName, ControllerFactory>> = {
  'cloud-node-controller': startCloudNodeController,
  'volume-provisioner-controller': startVolumeProvisioner,
  'volume-attacher-controller': startVolumeAttacher,
  'volume-resizer-controller': startVolumeResizer,
  'persistentvolume-label-controller': startPvLabelController,
};
