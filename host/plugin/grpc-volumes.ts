/**
 * The Volumes capability (host/cloud-volumes.ts) over the plugin's
 * VolumesService. Requests are built here and every answer is validated
 * (validate-volumes.ts) before a controller sees it.
 */
import type { Topology as PbTopology } from '../../proto/gen/ccm/provider/v1/common.js';
import type {
  ControllerExpandVolumeResponse,
  ControllerPublishVolumeResponse,
  CreateVolumeResponse,
  GetVolumeLabelsResponse,
  ListVolumesResponse,
  Volume as PbVolume,
} from '../../proto/gen/ccm/provider/v1/volumes.js';
import type { CloudVolume, CreateVolumeRequest, ExpandResult, ListedVolume, TopologySegments, Volumes } from '../cloud-volumes.js';
import { InvalidCloudResponseError, UnusableVolumeError } from '../errors.js';
import type { PluginSupervisor } from './supervisor.js';
import { stringMapProblems, volumeHandleProblem, volumeIdProblem, volumeLabelsProblems, volumeProblems } from './validate-volumes.js';
import { providerIdProblem } from './validate.js';

/** Page size asked of ListVolumes. */
const LIST_PAGE_SIZE = 500;
/** Pages followed before a ListVolumes answer is judged endless. */
const MAX_LIST_PAGES = 10_000;

export interface VolumeCallTimeouts {
  readMs: number;
  mutateMs: number;
}

function toPbTopology(ts: TopologySegments[]): PbTopology[] {
  return ts.map((segments) => ({ segments }));
}

function fromPbVolume(v: PbVolume): CloudVolume {
  return {
    volumeId: v.volumeId,
    capacityBytes: Number(v.capacityBytes),
    volumeContext: { ...(v.volumeContext ?? {}) },
    accessibleTopology: (v.accessibleTopology ?? []).map((t) => ({ ...(t.segments ?? {}) })),
  };
}

function check(method: string, problems: (string | undefined)[]): void {
  const real = problems.filter((p): p is string => !!p);
  if (real.length) throw new InvalidCloudResponseError(method, real);
}

export class GrpcVolumes implements Volumes {
  constructor(
    private readonly supervisor: PluginSupervisor,
    private readonly timeouts: VolumeCallTimeouts,
    /** Whether the provider advertised CAPABILITY_VOLUMES_LIST_PUBLISHED_NODES. */
    readonly listsPublishedNodes: boolean,
  ) {}

  /** RequestMeta: the operation's idempotency id, the cluster's name and UID (so providers can tag volumes) and the attempt. */
  private meta(operationId: string, attempt = 1) {
    return { operationId, clusterName: this.supervisor.clusterName, clusterUid: this.supervisor.clusterUid, attempt };
  }

  private call<Res>(method: string, request: object, mutating: boolean): Promise<Res> {
    const conn = this.supervisor.connection();
    return conn.unary<object, Res>(conn.volumes, method, request, mutating ? this.timeouts.mutateMs : this.timeouts.readMs);
  }

  async createVolume(req: CreateVolumeRequest, attempt = 1): Promise<CloudVolume> {
    const r = await this.call<CreateVolumeResponse>(
      'CreateVolume',
      {
        meta: this.meta(req.name, attempt),
        name: req.name,
        capacityRange: { requiredBytes: req.requiredBytes, limitBytes: req.limitBytes },
        parameters: req.parameters,
        accessibilityRequirements:
          req.requisite.length || req.preferred.length
            ? { requisite: toPbTopology(req.requisite), preferred: toPbTopology(req.preferred) }
            : undefined,
      },
      true,
    );
    // An answer, even a bad one, means the cloud made the volume: UnusableVolumeError (with its id when that id is sound).
    if (!r.volume) throw new UnusableVolumeError(['volume is missing'], undefined);
    const v = fromPbVolume(r.volume);
    const problems = volumeProblems(v, req);
    if (problems.length) throw new UnusableVolumeError(problems, volumeIdProblem(v.volumeId) ? undefined : v.volumeId);
    // A provider may leave the size out; the request is then what was made.
    if (v.capacityBytes === 0) v.capacityBytes = req.requiredBytes;
    return v;
  }

  async deleteVolume(volumeId: string): Promise<void> {
    await this.call('DeleteVolume', { meta: this.meta(`delete-${volumeId}`), volumeId }, true);
  }

  async controllerPublish(
    volumeId: string,
    nodeId: string,
    readonly: boolean,
    volumeContext: Record<string, string>,
  ): Promise<Record<string, string>> {
    const r = await this.call<ControllerPublishVolumeResponse>(
      'ControllerPublishVolume',
      { meta: this.meta(`publish-${volumeId}-${nodeId}`), volumeId, nodeId, readonly, volumeContext },
      true,
    );
    const ctx = { ...(r.publishContext ?? {}) };
    check('ControllerPublishVolume', stringMapProblems('publish_context', ctx));
    return ctx;
  }

  async controllerUnpublish(volumeId: string, nodeId: string): Promise<void> {
    await this.call('ControllerUnpublishVolume', { meta: this.meta(`unpublish-${volumeId}-${nodeId}`), volumeId, nodeId }, true);
  }

  async expandVolume(volumeId: string, requiredBytes: number): Promise<ExpandResult> {
    const r = await this.call<ControllerExpandVolumeResponse>(
      'ControllerExpandVolume',
      { meta: this.meta(`expand-${volumeId}-${requiredBytes}`), volumeId, capacityRange: { requiredBytes, limitBytes: 0 } },
      true,
    );
    const capacityBytes = Number(r.capacityBytes);
    check('ControllerExpandVolume', [
      !Number.isSafeInteger(capacityBytes) || capacityBytes < 0 ? `capacity_bytes ${r.capacityBytes} is not a whole number >= 0` : undefined,
      capacityBytes > 0 && capacityBytes < requiredBytes ? `capacity_bytes ${capacityBytes} is below the requested ${requiredBytes}` : undefined,
    ]);
    return { capacityBytes: capacityBytes || requiredBytes, nodeExpansionRequired: !!r.nodeExpansionRequired };
  }

  async listVolumes(): Promise<ListedVolume[]> {
    const out: ListedVolume[] = [];
    let pageToken = '';
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const r = await this.call<ListVolumesResponse>('ListVolumes', { meta: this.meta(''), pageSize: LIST_PAGE_SIZE, pageToken }, false);
      for (const e of r.entries ?? []) {
        if (!e.volume) throw new InvalidCloudResponseError('ListVolumes', ['an entry has no volume']);
        const volume = fromPbVolume(e.volume);
        const publishedNodeIds = [...(e.publishedNodeIds ?? [])];
        check('ListVolumes', [...volumeProblems(volume), ...publishedNodeIds.map(providerIdProblem)]);
        out.push({ volume, publishedNodeIds });
      }
      if (!r.nextPageToken) return out;
      if (r.nextPageToken === pageToken) throw new InvalidCloudResponseError('ListVolumes', ['next_page_token repeats the current token']);
      pageToken = r.nextPageToken;
    }
    throw new InvalidCloudResponseError('ListVolumes', [`more than ${MAX_LIST_PAGES} pages`]);
  }

  async getVolumeLabels(volumeId: string): Promise<Record<string, string>> {
    check('GetVolumeLabels', [volumeHandleProblem(volumeId)]);
    const r = await this.call<GetVolumeLabelsResponse>('GetVolumeLabels', { meta: this.meta(''), volumeId }, false);
    const labels = { ...(r.labels ?? {}) };
    check('GetVolumeLabels', volumeLabelsProblems(labels));
    return labels;
  }
}
