/**
 * The controllers this build implements, by canonical name. Adding a
 * controller = one entry here (plus its name in host/names.ts). Each
 * controller's code is loaded only when it is enabled, which keeps a host
 * running a few controllers smaller.
 */
import type { ControllerName } from '../names.js';
import type { ControllerFactory, ControllerPreflight } from './context.js';

/** Loads a controller's factory. */
export type ControllerLoader = () => Promise<ControllerFactory>;

export const CONTROLLER_FACTORIES: Partial<Record<ControllerName, ControllerLoader>> = {
  'cloud-node-controller': async () => (await import('./node/start.js')).startCloudNodeController,
  'cloud-node-lifecycle-controller': async () => (await import('./lifecycle/start.js')).startNodeLifecycleController,
  'service-lb-controller': async () => (await import('./service/start.js')).startServiceController,
  'node-route-controller': async () => (await import('./route/start.js')).startRouteController,
  'node-ipam-controller': async () => (await import('./nodeipam/start.js')).startNodeIpamController,
  'volume-provisioner-controller': async () => (await import('./volume/start.js')).startVolumeProvisioner,
  'volume-attacher-controller': async () => (await import('./volume/start.js')).startVolumeAttacher,
  'volume-resizer-controller': async () => (await import('./volume/start.js')).startVolumeResizer,
  'persistentvolume-label-controller': async () => (await import('./volume/start.js')).startPvLabelController,
};

/** Start-up checks of controllers whose misconfiguration must stop the host (loaded and run for enabled controllers only). */
export const CONTROLLER_PREFLIGHTS: Partial<Record<ControllerName, () => Promise<ControllerPreflight>>> = {
  'node-route-controller': async () => (await import('./route/start.js')).routePreflight,
  'service-lb-controller': async () => (await import('./service/start.js')).servicePreflight,
  'volume-provisioner-controller': async () => (await import('./volume/start.js')).volumePreflight,
  'volume-attacher-controller': async () => (await import('./volume/start.js')).volumePreflight,
  'volume-resizer-controller': async () => (await import('./volume/start.js')).volumePreflight,
  'persistentvolume-label-controller': async () => (await import('./volume/start.js')).volumePreflight,
};
