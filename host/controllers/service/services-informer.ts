/** The Services resource for the shared informer factory (honours --watch-namespace). */
import type { V1Service } from '@kubernetes/client-node';
import type { ResourceSpec } from '../../kube/informer-factory.js';

export const SERVICES: ResourceSpec<V1Service> = {
  name: 'services',
  path: '/api/v1/services',
  namespacedPath: (ns) => `/api/v1/namespaces/${encodeURIComponent(ns)}/services`,
  list: (c, a) => (a.namespace ? c.core.listNamespacedService({ namespace: a.namespace }) : c.core.listServiceForAllNamespaces({})),
};
