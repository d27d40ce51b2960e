/**
 * The local cloud's persistent state, shared by the provider processes and
 * the `localcloud` CLI through a state directory:
 *
 *   state.jsonl       snapshot + one line per update (see state-log.ts)
 *   state.lock/       present while a writer holds the lock (see lock.ts)
 *   volumes/<id>.img  one sparse file per volume, of the volume's size
 *   state.json        older versions' whole-document state; read while there
 *                     is no state.jsonl, removed by the first write
 *
 * Writers go through {@link StateStore.update}: take the cross-process lock,
 * catch up with the log, let the caller change an immer draft of the state,
 * and append the changed records as one line; the cost is O(changed records)
 * (plus pointer comparisons), not O(state). Readers go through
 * {@link StateStore.view}: one stat(2) when nothing changed, else only the
 * appended lines are read. Views are deep-frozen and share unchanged records.
 */
import { mkdirSync, readFileSync, rmSync, statSync, type Stats } from 'node:fs';
import { join, resolve } from 'node:path';
import { current, freeze, Immer, isDraft, isDraftable, type Draft } from 'immer';
import { DirLock, LOCK_WAIT_MS } from './lock.js';
import { applyChanges, diffState, indexRecords, type Records } from './state-changes.js';
import { COMPACT_MIN_BYTES, StateLog } from './state-log.js';

/** Directory used when neither --state nor LOCALCLOUD_STATE_DIR is given (relative to cwd). */
export const DEFAULT_STATE_DIR = '.localcloud';
/** Environment variable naming the state directory. */
export const ENV_STATE_DIR = 'LOCALCLOUD_STATE_DIR';
/** The state log inside the state directory (see state-log.ts). */
export const LOG_FILE = 'state.jsonl';
/** The state document of older versions, read (and replaced by the log on the first write) when there is no log. */
export const LEGACY_STATE_FILE = 'state.json';
/** The lock directory inside the state directory. */
export const LOCK_DIR = 'state.lock';
/** Directory of volume images inside the state directory. */
export const VOLUMES_DIR = 'volumes';
/** Version of the state document this build reads and writes. */
export const STATE_VERSION = 1;

/** Kubernetes node address types, as strings (NodeAddressType). */
export type AddressType = 'InternalIP' | 'ExternalIP' | 'Hostname' | 'InternalDNS' | 'ExternalDNS';
/** Every valid {@link AddressType}. */
export const ADDRESS_TYPES: readonly AddressType[] = ['InternalIP', 'ExternalIP', 'Hostname', 'InternalDNS', 'ExternalDNS'];

/** One address of an instance. */
export interface AddressRecord {
  type: AddressType;
  address: string;
}

/** Power state of an instance. */
export type InstanceState = 'running' | 'stopped';

/** A simulated machine; its name is the Kubernetes node name. */
export interface InstanceRecord {
  /** Cloud id, `i-` + 8 hex digits; the providerID is `local://<id>`. */
  id: string;
  /** Node name; unique among instances. */
  name: string;
  /** Instance type, e.g. `local.small`. */
  type: string;
  zone: string;
  region: string;
  addresses: AddressRecord[];
  state: InstanceState;
  /** Extra node labels reported by InstanceMetadata. */
  labels: Record<string, string>;
  /** ISO-8601 creation time. */
  createdAt: string;
}

/** L4 protocol of a load balancer port. */
export type LbProtocol = 'TCP' | 'UDP' | 'SCTP';

/** One listener of a load balancer: ingressIp:port forwards to <backend address>:nodePort. */
export interface LbPortRecord {
  name: string;
  protocol: LbProtocol;
  /** Port the load balancer listens on. */
  port: number;
  /** Node port the backends listen on (0 when the Service allocates none). */
  nodePort: number;
}

/** One backend node of a load balancer. */
export interface LbBackendRecord {
  nodeName: string;
  /** Address traffic is forwarded to (InternalIP preferred); empty when unknown. */
  address: string;
}

/** One pod backend of a load balancer: an address and its port per Service port (`PROTOCOL/port` → port). */
export interface LbPodBackendRecord {
  address: string;
  zone: string;
  nodeName: string;
  ports: Record<string, number>;
}

/** A load balancer for one Service of one cluster. */
export interface LoadBalancerRecord {
  /** Cloud name, derived from cluster name and service uid (see names.ts). */
  name: string;
  clusterName: string;
  /**
   * RequestMeta.cluster_uid of the last ensure (creation or adoption); absent
   * in state written before cluster UIDs, and when the host sent none.
   */
  clusterUid?: string;
  serviceUid: string;
  serviceNamespace: string;
  serviceName: string;
  /** Allocated (or requested) ingress address. */
  ingressIp: string;
  ipMode: 'VIP' | 'Proxy';
  ports: LbPortRecord[];
  backends: LbBackendRecord[];
  /**
   * Pod-IP backends (protocol 1.1): present when the host sent pod backends
   * for the Service (ServiceRef.pod_backends), then the forwarder sends to
   * these instead of the node ports; each with the port per Service port.
   * Already narrowed to the load balancer's zone under PreferClose.
   */
  podBackends?: LbPodBackendRecord[];
  /** spec.loadBalancerSourceRanges; empty means everyone. */
  sourceRanges: string[];
  externalTrafficPolicy: 'Cluster' | 'Local';
  /** spec.healthCheckNodePort (0 when unset). */
  healthCheckNodePort: number;
  sessionAffinity: 'None' | 'ClientIP';
  createdAt: string;
}

/** A route sending destinationCidr to targetNode, scoped to one cluster. */
export interface RouteRecord {
  name: string;
  clusterName: string;
  targetNode: string;
  /** Canonical CIDR (network address / prefix). */
  destinationCidr: string;
  targetNodeAddresses: AddressRecord[];
  createdAt: string;
}

/** One attachment of a volume. */
export interface VolumeAttachmentRecord {
  instanceId: string;
  readonly: boolean;
}

/** A block volume backed by the sparse file `volumes/<id>.img`. */
export interface VolumeRecord {
  /** Cloud id, `vol-` + 8 hex digits. */
  id: string;
  /** Idempotency key of CreateVolume (e.g. `pvc-<uid>`); unique. */
  name: string;
  /** Current size in bytes (equals the image file's size). */
  capacityBytes: number;
  /** Size CreateVolume resolved on creation, in bytes; compared on retries. */
  requestedBytes: number;
  zone: string;
  region: string;
  /** StorageClass parameters given at creation. */
  parameters: Record<string, string>;
  attachments: VolumeAttachmentRecord[];
  createdAt: string;
}

/** An SSH key recorded by AddSshKeyToAllInstances. */
export interface SshKeyRecord {
  user: string;
  /** SHA-256 of the key bytes, hex; the identity of the record. */
  fingerprint: string;
  /** The key bytes, base64. */
  key: string;
}

/**
 * Runtime overrides of the fault-injection knobs (see knobs.ts). A key that
 * is absent falls back to the environment of the provider process.
 */
export interface KnobSettings {
  latencyMs?: number;
  latencyJitterMs?: number;
  errorRate?: number;
  rateLimitQps?: number;
  rateLimitBurst?: number;
  failAll?: boolean;
  replyLatencyMs?: number;
  hold?: string;
  fail?: string;
  lbQuota?: number;
  lbQuotaRetryMs?: number;
  respell?: string;
}

/** The whole state document. */
export interface LocalCloudState {
  version: number;
  instances: InstanceRecord[];
  loadBalancers: LoadBalancerRecord[];
  routes: RouteRecord[];
  volumes: VolumeRecord[];
  sshKeys: SshKeyRecord[];
  knobs: KnobSettings;
}

/** A new, empty state document. */
export function emptyState(): LocalCloudState {
  return { version: STATE_VERSION, instances: [], loadBalancers: [], routes: [], volumes: [], sshKeys: [], knobs: {} };
}

/**
 * The state directory: the --state flag, else $LOCALCLOUD_STATE_DIR, else
 * `.localcloud` under `cwd`; always absolute.
 */
export function resolveStateDir(flag?: string, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string {
  const dir = flag || env[ENV_STATE_DIR] || DEFAULT_STATE_DIR;
  return resolve(cwd, dir);
}

/** An immutable (deep-frozen) state with lookup indexes. */
export class StateView {
  /** Records of each kind by key (see state-changes.ts). */
  readonly records: Records;
  private byName?: Map<string, InstanceRecord>;

  /** `records` must index `state` (built from it when not given). */
  constructor(
    readonly state: Readonly<LocalCloudState>,
    records?: Records,
  ) {
    this.records = records ?? indexRecords(state, 'state');
  }

  /** The instance with this id, if any. */
  instanceById(id: string): InstanceRecord | undefined {
    return this.records.instances.get(id);
  }

  /** The instance with this node name, if any. */
  instanceByName(name: string): InstanceRecord | undefined {
    this.byName ??= new Map(this.state.instances.map((i) => [i.name, i]));
    return this.byName.get(name);
  }

  /** The load balancer with this cloud name, if any. */
  loadBalancer(name: string): LoadBalancerRecord | undefined {
    return this.records.loadBalancers.get(name);
  }

  /** The volume with this id, if any. */
  volumeById(id: string): VolumeRecord | undefined {
    return this.records.volumes.get(id);
  }
}

/** Options of {@link StateStore}. */
export interface StateStoreOptions {
  /** Bound on waiting for the cross-process lock, in milliseconds. */
  lockWaitMs?: number;
  /** fsync the state log on every write (default false: durable across process restarts, not power loss). */
  fsync?: boolean;
  /** Updates are compacted into a new snapshot once they exceed it and this many bytes (default 1 MiB). */
  compactMinBytes?: number;
}

/**
 * Reads and writes one state directory. Safe to use from several processes
 * at once. Keeps the state log open for the life of the process.
 */
export class StateStore {
  /** Absolute state directory. */
  readonly dir: string;
  /** Absolute path of the state log, state.jsonl. */
  readonly file: string;
  /** Absolute path of the state document of older versions, state.json (read when there is no log). */
  readonly legacyFile: string;
  /** Absolute path of the volume image directory. */
  readonly volumesDir: string;
  private readonly lock: DirLock;
  private readonly log: StateLog<StateView>;
  /** Drafts of updates; results are frozen, so every view shares unchanged records. */
  private readonly immer = new Immer({ autoFreeze: true, useStrictIteration: false });
  private legacy?: { key: string; view: StateView };
  private dirReady = false;
  /** Settles when this process's previous update has finished (FIFO turn). */
  private turn: Promise<void> = Promise.resolve();

  constructor(dir: string, opts: StateStoreOptions = {}) {
    if (!dir) throw new TypeError('state directory must not be empty');
    this.dir = resolve(dir);
    this.file = join(this.dir, LOG_FILE);
    this.legacyFile = join(this.dir, LEGACY_STATE_FILE);
    this.volumesDir = join(this.dir, VOLUMES_DIR);
    this.lock = new DirLock(join(this.dir, LOCK_DIR), { waitMs: opts.lockWaitMs ?? LOCK_WAIT_MS });
    this.log = new StateLog(
      this.file,
      { fsync: opts.fsync ?? false, compactMinBytes: opts.compactMinBytes ?? COMPACT_MIN_BYTES },
      (x) => new StateView(x.state, x.records),
    );
  }

  /** Path of a volume's image file. */
  volumePath(id: string): string {
    if (!/^[A-Za-z0-9._-]+$/.test(id) || id.startsWith('.')) throw new TypeError(`invalid volume id ${JSON.stringify(id)}`);
    return join(this.volumesDir, `${id}.img`);
  }

  /** Creates the state directory and its volume directory if missing. */
  ensureDir(): void {
    if (this.dirReady) return;
    mkdirSync(this.volumesDir, { recursive: true });
    this.dirReady = true;
  }

  /**
   * The current state, deep-frozen. Costs one stat when nothing changed, and
   * reading the appended updates when something did.
   */
  view(): StateView {
    const fromLog = this.log.refresh();
    if (fromLog) {
      this.legacy = undefined;
      return fromLog;
    }
    return this.legacyView();
  }

  /** Shorthand for `view().state`. */
  read(): Readonly<LocalCloudState> {
    return this.view().state;
  }

  /**
   * Read-modify-write under the cross-process lock. `fn` gets a draft of the
   * current state to modify in place (an immer draft: it behaves like plain
   * objects, but is only valid during `fn`), and the view the draft starts
   * from (plain records and indexes: lookups there cost no proxies). The records it changed are
   * appended to the state log; nothing is written when nothing changed. If
   * `fn` throws, nothing is written and the error propagates. Returns what
   * `fn` returns, with drafts in it replaced by plain copies.
   *
   * Each list keeps insertion order: a changed record keeps its place, a new
   * one goes last (reordering a list is not recorded). Two records with one
   * key (see state-changes.ts) in a list fail the update.
   */
  async update<T>(fn: (draft: LocalCloudState, base: StateView) => T | Promise<T>): Promise<T> {
    this.ensureDir();
    // Callers in this process take turns before going for the file lock, so
    // they queue in order instead of polling the lock directory against each
    // other (polling cost tens of ms per update with 10 concurrent callers).
    const previous = this.turn;
    let done!: () => void;
    this.turn = new Promise<void>((resolve) => (done = resolve));
    try {
      await previous;
      return await this.updateLocked(fn);
    } finally {
      done();
    }
  }

  private updateLocked<T>(fn: (draft: LocalCloudState, base: StateView) => T | Promise<T>): Promise<T> {
    return this.lock.withLock(async () => {
      const base = this.view();
      const draft = this.immer.createDraft(base.state as LocalCloudState);
      const result = detach(await fn(draft, base));
      const next = this.immer.finishDraft(draft);
      const { changes, line } = diffState(base, next);
      if (changes.length === 0) return result;
      const migrating = !this.log.exists && this.legacy?.key !== ABSENT;
      const after = applyChanges(base, changes);
      this.log.commit(new StateView(after.state, after.records), line);
      // The log now holds everything state.json did.
      if (migrating) rmSync(this.legacyFile, { force: true });
      return result;
    });
  }

  /** The state in state.json, for directories written by older versions; empty when there is none. */
  private legacyView(): StateView {
    let st: Stats | undefined;
    try {
      st = statSync(this.legacyFile);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const key = st ? `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}` : ABSENT;
    if (this.legacy?.key !== key) {
      const state = st ? parseState(readFileSync(this.legacyFile, 'utf8'), this.legacyFile) : emptyState();
      this.legacy = { key, view: new StateView(freeze(state, true)) };
    }
    return this.legacy.view;
  }
}

const ABSENT = 'absent';

/**
 * `value` with every immer draft in it replaced by a plain copy, so it stays
 * usable after the draft is finished (drafts are revoked then). Walks only
 * plain objects and arrays that are not frozen: frozen ones are state
 * records, which hold no drafts.
 */
function detach<T>(value: T): T {
  if (isDraft(value)) return current(value as Draft<T>) as T;
  if (typeof value !== 'object' || value === null || !isDraftable(value) || Object.isFrozen(value)) return value;
  const obj = value as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    const child = obj[key];
    const plain = detach(child);
    if (plain !== child) obj[key] = plain;
  }
  return value;
}

/** Parses and normalizes a state document; throws one clear line on garbage. */
export function parseState(raw: string, file = LEGACY_STATE_FILE): LocalCloudState {
  let doc: unknown;
  try {
    doc = JSON.parse(raw);
  } catch (err) {
    throw new Error(`state file ${file} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new Error(`state file ${file} is not a JSON object`);
  const d = doc as Partial<LocalCloudState>;
  const version = d.version ?? STATE_VERSION;
  if (version !== STATE_VERSION) throw new Error(`state file ${file} has version ${String(version)}; this build reads version ${STATE_VERSION}`);
  const list = <T>(v: T[] | undefined, name: string): T[] => {
    if (v === undefined) return [];
    if (!Array.isArray(v)) throw new Error(`state file ${file}: "${name}" is not an array`);
    return v;
  };
  const knobs = d.knobs ?? {};
  if (typeof knobs !== 'object' || Array.isArray(knobs)) throw new Error(`state file ${file}: "knobs" is not an object`);
  return {
    version,
    instances: list(d.instances, 'instances'),
    loadBalancers: list(d.loadBalancers, 'loadBalancers'),
    routes: list(d.routes, 'routes'),
    volumes: list(d.volumes, 'volumes'),
    sshKeys: list(d.sshKeys, 'sshKeys'),
    knobs,
  };
}
