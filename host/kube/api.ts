/**
 * Typed API facades over {@link RestClient}: the methods of client-node's
 * generated API classes that the host calls, with the same names and
 * parameter objects, so call sites read the same. Objects are plain JSON
 * (timestamps are strings); see rest.ts. The second argument of every method
 * takes call options: an abort `signal`, and for patches the patch type.
 */
import type {
  CoreV1Event,
  V1Lease,
  V1Namespace,
  V1Node,
  V1NodeList,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1PersistentVolumeClaimList,
  V1PersistentVolumeList,
  V1ServiceAccount,
  V1Service,
  V1ServiceList,
  V1StorageClassList,
  V1VolumeAttachment,
  V1VolumeAttachmentList,
  VersionInfo,
  AuthenticationV1TokenRequest,
  V1Status,
} from '@kubernetes/client-node';
import type { Query, RestClient } from './rest.js';

/**
 * The patch formats the API server understands for built-in types:
 * - `merge`: RFC 7386 JSON merge patch (objects merge, arrays are replaced, `null` deletes);
 * - `strategic`: strategic merge patch (lists with a merge key, e.g. node
 *   conditions by `type`, merge element-wise);
 * - `json`: RFC 6902 JSON patch (an array of operations);
 * - `apply`: server-side apply (needs a `fieldManager`).
 */
export type PatchType = 'merge' | 'strategic' | 'json' | 'apply';

const CONTENT_TYPES: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  json: 'application/json-patch+json',
  apply: 'application/apply-patch+yaml',
};

/** Per-call options. */
export interface CallOptions {
  signal?: AbortSignal;
  /** For patch methods: the patch format. Default `json` (client-node's default for patches). */
  patchType?: PatchType;
  /**
   * For writes whose answer the caller never reads: the answer is not decoded
   * and the call resolves to undefined, whatever its declared type (rest.ts
   * RequestOptions.discardAnswer). patch.ts's helpers that return nothing use it.
   */
  discardAnswer?: boolean;
}

/** Query parameters of list calls. */
export interface ListParams {
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  limit?: number;
}

interface Named {
  name: string;
}
interface InNamespace {
  namespace: string;
}
interface WithBody {
  body: unknown;
}
interface WriteParams {
  fieldManager?: string;
  dryRun?: string;
}

/** Read/list/create/patch/replace/delete of one resource kind at an API path. */
class Resource {
  constructor(
    private readonly rest: RestClient,
    private readonly prefix: string,
    private readonly plural: string,
  ) {}

  private path(namespace: string | undefined, name?: string, sub?: string): string {
    let p = this.prefix;
    if (namespace !== undefined) p += `/namespaces/${encodeURIComponent(namespace)}`;
    p += `/${this.plural}`;
    if (name !== undefined) p += `/${encodeURIComponent(name)}`;
    if (sub) p += `/${sub}`;
    return p;
  }

  read<T>(namespace: string | undefined, name: string, o?: CallOptions): Promise<T> {
    return this.rest.request<T>('GET', this.path(namespace, name), { signal: o?.signal });
  }

  list<T>(namespace: string | undefined, q: ListParams = {}, o?: CallOptions): Promise<T> {
    return this.rest.request<T>('GET', this.path(namespace), { query: q as Query, signal: o?.signal });
  }

  create<T>(namespace: string | undefined, body: unknown, q: WriteParams = {}, o?: CallOptions, name?: string, sub?: string): Promise<T> {
    return this.rest.request<T>('POST', this.path(namespace, name, sub), {
      body,
      query: q as Query,
      signal: o?.signal,
      discardAnswer: o?.discardAnswer,
    });
  }

  replace<T>(namespace: string | undefined, name: string, body: unknown, q: WriteParams = {}, o?: CallOptions): Promise<T> {
    return this.rest.request<T>('PUT', this.path(namespace, name), { body, query: q as Query, signal: o?.signal, discardAnswer: o?.discardAnswer });
  }

  patch<T>(namespace: string | undefined, name: string, body: unknown, q: WriteParams = {}, o?: CallOptions, sub?: string): Promise<T> {
    const type = o?.patchType ?? 'json';
    return this.rest.request<T>('PATCH', this.path(namespace, name, sub), {
      body,
      query: q as Query,
      contentType: CONTENT_TYPES[type],
      signal: o?.signal,
      discardAnswer: o?.discardAnswer,
    });
  }

  delete<T>(namespace: string | undefined, name: string, body: unknown, o?: CallOptions): Promise<T> {
    return this.rest.request<T>('DELETE', this.path(namespace, name), { body, signal: o?.signal, discardAnswer: o?.discardAnswer });
  }
}

type P<T = object> = T & WriteParams;

/** core/v1 (client-node `CoreV1Api` names). */
export class CoreV1Api {
  private readonly nodes: Resource;
  private readonly services: Resource;
  private readonly events: Resource;
  private readonly pvs: Resource;
  private readonly pvcs: Resource;
  private readonly serviceAccounts: Resource;
  private readonly namespaces: Resource;

  constructor(rest: RestClient) {
    this.nodes = new Resource(rest, '/api/v1', 'nodes');
    this.services = new Resource(rest, '/api/v1', 'services');
    this.events = new Resource(rest, '/api/v1', 'events');
    this.pvs = new Resource(rest, '/api/v1', 'persistentvolumes');
    this.pvcs = new Resource(rest, '/api/v1', 'persistentvolumeclaims');
    this.serviceAccounts = new Resource(rest, '/api/v1', 'serviceaccounts');
    this.namespaces = new Resource(rest, '/api/v1', 'namespaces');
  }

  readNamespace(p: Named, o?: CallOptions): Promise<V1Namespace> {
    return this.namespaces.read(undefined, p.name, o);
  }

  readNode(p: Named, o?: CallOptions): Promise<V1Node> {
    return this.nodes.read(undefined, p.name, o);
  }
  listNode(p: ListParams = {}, o?: CallOptions): Promise<V1NodeList> {
    return this.nodes.list(undefined, p, o);
  }
  patchNode(p: P<Named & WithBody>, o?: CallOptions): Promise<V1Node> {
    return this.nodes.patch(undefined, p.name, p.body, writeParams(p), o);
  }
  patchNodeStatus(p: P<Named & WithBody>, o?: CallOptions): Promise<V1Node> {
    return this.nodes.patch(undefined, p.name, p.body, writeParams(p), o, 'status');
  }
  deleteNode(p: Named & { body?: unknown }, o?: CallOptions): Promise<V1Status> {
    return this.nodes.delete(undefined, p.name, p.body, o);
  }

  readNamespacedService(p: Named & InNamespace, o?: CallOptions): Promise<V1Service> {
    return this.services.read(p.namespace, p.name, o);
  }
  listServiceForAllNamespaces(p: ListParams = {}, o?: CallOptions): Promise<V1ServiceList> {
    return this.services.list(undefined, p, o);
  }
  listNamespacedService(p: InNamespace & ListParams, o?: CallOptions): Promise<V1ServiceList> {
    return this.services.list(p.namespace, listParams(p), o);
  }
  patchNamespacedService(p: P<Named & InNamespace & WithBody>, o?: CallOptions): Promise<V1Service> {
    return this.services.patch(p.namespace, p.name, p.body, writeParams(p), o);
  }
  patchNamespacedServiceStatus(p: P<Named & InNamespace & WithBody>, o?: CallOptions): Promise<V1Service> {
    return this.services.patch(p.namespace, p.name, p.body, writeParams(p), o, 'status');
  }

  createNamespacedEvent(p: P<InNamespace & { body: CoreV1Event }>, o?: CallOptions): Promise<CoreV1Event> {
    return this.events.create(p.namespace, p.body, writeParams(p), o);
  }
  patchNamespacedEvent(p: P<Named & InNamespace & WithBody>, o?: CallOptions): Promise<CoreV1Event> {
    return this.events.patch(p.namespace, p.name, p.body, writeParams(p), o);
  }

  readPersistentVolume(p: Named, o?: CallOptions): Promise<V1PersistentVolume> {
    return this.pvs.read(undefined, p.name, o);
  }
  listPersistentVolume(p: ListParams = {}, o?: CallOptions): Promise<V1PersistentVolumeList> {
    return this.pvs.list(undefined, p, o);
  }
  createPersistentVolume(p: P<{ body: V1PersistentVolume }>, o?: CallOptions): Promise<V1PersistentVolume> {
    return this.pvs.create(undefined, p.body, writeParams(p), o);
  }
  patchPersistentVolume(p: P<Named & WithBody>, o?: CallOptions): Promise<V1PersistentVolume> {
    return this.pvs.patch(undefined, p.name, p.body, writeParams(p), o);
  }
  deletePersistentVolume(p: Named & { body?: unknown }, o?: CallOptions): Promise<V1PersistentVolume> {
    return this.pvs.delete(undefined, p.name, p.body, o);
  }

  listPersistentVolumeClaimForAllNamespaces(p: ListParams = {}, o?: CallOptions): Promise<V1PersistentVolumeClaimList> {
    return this.pvcs.list(undefined, p, o);
  }
  listNamespacedPersistentVolumeClaim(p: InNamespace & ListParams, o?: CallOptions): Promise<V1PersistentVolumeClaimList> {
    return this.pvcs.list(p.namespace, listParams(p), o);
  }
  patchNamespacedPersistentVolumeClaim(p: P<Named & InNamespace & WithBody>, o?: CallOptions): Promise<V1PersistentVolumeClaim> {
    return this.pvcs.patch(p.namespace, p.name, p.body, writeParams(p), o);
  }
  patchNamespacedPersistentVolumeClaimStatus(p: P<Named & InNamespace & WithBody>, o?: CallOptions): Promise<V1PersistentVolumeClaim> {
    return this.pvcs.patch(p.namespace, p.name, p.body, writeParams(p), o, 'status');
  }

  readNamespacedServiceAccount(p: Named & InNamespace, o?: CallOptions): Promise<V1ServiceAccount> {
    return this.serviceAccounts.read(p.namespace, p.name, o);
  }
  createNamespacedServiceAccount(p: P<InNamespace & { body: V1ServiceAccount }>, o?: CallOptions): Promise<V1ServiceAccount> {
    return this.serviceAccounts.create(p.namespace, p.body, writeParams(p), o);
  }
  createNamespacedServiceAccountToken(
    p: P<Named & InNamespace & { body: AuthenticationV1TokenRequest }>,
    o?: CallOptions,
  ): Promise<AuthenticationV1TokenRequest> {
    return this.serviceAccounts.create(p.namespace, p.body, writeParams(p), o, p.name, 'token');
  }
}

/** coordination.k8s.io/v1 (client-node `CoordinationV1Api` names). */
export class CoordinationV1Api {
  private readonly leases: Resource;

  constructor(rest: RestClient) {
    this.leases = new Resource(rest, '/apis/coordination.k8s.io/v1', 'leases');
  }

  readNamespacedLease(p: Named & InNamespace, o?: CallOptions): Promise<V1Lease> {
    return this.leases.read(p.namespace, p.name, o);
  }
  listNamespacedLease(p: InNamespace & ListParams, o?: CallOptions): Promise<{ items: V1Lease[] }> {
    return this.leases.list(p.namespace, listParams(p), o);
  }
  createNamespacedLease(p: P<InNamespace & { body: V1Lease }>, o?: CallOptions): Promise<V1Lease> {
    return this.leases.create(p.namespace, p.body, writeParams(p), o);
  }
  replaceNamespacedLease(p: P<Named & InNamespace & { body: V1Lease }>, o?: CallOptions): Promise<V1Lease> {
    return this.leases.replace(p.namespace, p.name, p.body, writeParams(p), o);
  }
}

/** storage.k8s.io/v1 (client-node `StorageV1Api` names). */
export class StorageV1Api {
  private readonly classes: Resource;
  private readonly attachments: Resource;

  constructor(rest: RestClient) {
    this.classes = new Resource(rest, '/apis/storage.k8s.io/v1', 'storageclasses');
    this.attachments = new Resource(rest, '/apis/storage.k8s.io/v1', 'volumeattachments');
  }

  listStorageClass(p: ListParams = {}, o?: CallOptions): Promise<V1StorageClassList> {
    return this.classes.list(undefined, p, o);
  }
  listVolumeAttachment(p: ListParams = {}, o?: CallOptions): Promise<V1VolumeAttachmentList> {
    return this.attachments.list(undefined, p, o);
  }
  readVolumeAttachment(p: Named, o?: CallOptions): Promise<V1VolumeAttachment> {
    return this.attachments.read(undefined, p.name, o);
  }
  patchVolumeAttachment(p: P<Named & WithBody>, o?: CallOptions): Promise<V1VolumeAttachment> {
    return this.attachments.patch(undefined, p.name, p.body, writeParams(p), o);
  }
  patchVolumeAttachmentStatus(p: P<Named & WithBody>, o?: CallOptions): Promise<V1VolumeAttachment> {
    return this.attachments.patch(undefined, p.name, p.body, writeParams(p), o, 'status');
  }
}

/** `GET /version` (client-node `VersionApi.getCode`). */
export function getVersion(rest: RestClient, o?: CallOptions): Promise<VersionInfo> {
  return rest.request('GET', '/version', { signal: o?.signal });
}

function writeParams(p: WriteParams): WriteParams {
  return { fieldManager: p.fieldManager, dryRun: p.dryRun };
}

function listParams(p: ListParams): ListParams {
  return { labelSelector: p.labelSelector, fieldSelector: p.fieldSelector, resourceVersion: p.resourceVersion, limit: p.limit };
}
