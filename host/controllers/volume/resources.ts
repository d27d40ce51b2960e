/**
 * Shared-informer specs (host/kube/informer-factory.ts) of the storage
 * objects the volume controllers watch. Claims are namespaced and honour
 * --watch-namespace; the others are cluster-scoped.
 */
import { type V1PersistentVolume, type V1PersistentVolumeClaim, type V1StorageClass, type V1VolumeAttachment } from '@kubernetes/client-node';
import type { ResourceSpec } from '../../kube/informer-factory.js';

export const PERSISTENT_VOLUME_CLAIMS: ResourceSpec<V1PersistentVolumeClaim> = {
  name: 'persistentvolumeclaims',
  path: '/api/v1/persistentvolumeclaims',
  namespacedPath: (ns) => `/api/v1/namespaces/${ns}/persistentvolumeclaims`,
  list: (c, a) =>
    a.namespace ? c.core.listNamespacedPersistentVolumeClaim({ namespace: a.namespace }) : c.core.listPersistentVolumeClaimForAllNamespaces(),
};

export const PERSISTENT_VOLUMES: ResourceSpec<V1PersistentVolume> = {
  name: 'persistentvolumes',
  path: '/api/v1/persistentvolumes',
  list: (c) => c.core.listPersistentVolume(),
};

export const STORAGE_CLASSES: ResourceSpec<V1StorageClass> = {
  name: 'storageclasses',
  path: '/apis/storage.k8s.io/v1/storageclasses',
  list: (c) => c.storage.listStorageClass(),
};

export const VOLUME_ATTACHMENTS: ResourceSpec<V1VolumeAttachment> = {
  name: 'volumeattachments',
  path: '/apis/storage.k8s.io/v1/volumeattachments',
  list: (c) => c.storage.listVolumeAttachment(),
};
