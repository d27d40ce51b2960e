/**
 * The local cloud's persistent state: one JSON document in the state
 * directory, shared by the provider process and the `localcloud` CLI.
 *
 * Layout of a state directory:
 *   state.json        instances, load balancers, routes, volumes, knobs
 *   state.lock/       present while a writer holds the lock (see lock.ts)
 *   volumes/<id>.img  one sparse file per volume, of the volume's size
 *
 * Writers go through {@link StateStore.update}: take the cross-process lock,
 * re-read, modify a private copy, write it atomically (temp file + rename),
 * release. Readers go through {@link StateStore.view}, which costs one
 * stat(2) when nothing changed: the parsed state and its indexes are cached
 * and re-read only when the file's identity (inode, size, mtime, ctime)
 * changes, or when it was modified so recently that a same-tick rewrite could
 * hide behind an unchanged timestamp.
 */
import { mkdirSync, readFileSync, statSync, type Stats } from 'node:fs';
import { join, resolve } from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { DirLock, LOCK_WAIT_MS } from './lock.js';

/** Directory used when neither --state nor LOCALCLOUD_STATE_DIR is given (relative to cwd). */
export const DEFAULT_STATE_DIR = '.localcloud';
/** Environment variable naming the state directory. */
export const ENV_STATE_DIR = 'LOCALCLOUD_STATE_DIR';
/** The state document inside the state directory. */
export const STATE_FILE = 'state.json';
/** The lock directory inside the state directory. */
export const LOCK_DIR = 'state.lock';
/** Directory of volume images inside the state directory. */
export const VOLUMES_DIR = 'volumes';
/** Version of the state document this build reads and writes. */
export const STATE_VERSION = 1;
/**
 * A file modified less than this long ago is re-read even if its stat looks
 * unchanged, because timestamps are coarse (ms).
 */
const RACY_WINDOW_MS = 50;

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

/** A load balancer for one Service of one cluster. */
export interface LoadBalancerRecord {
  /** Cloud name, derived from cluster name and service uid (see names.ts). */
  name: string;
  clusterName: string;
  serviceUid: string;
  serviceNamespace: string;
  serviceName: string;
  /** Allocated (or requested) ingress address. */
  ingressIp: string;
  ipMode: 'VIP' | 'Proxy';
  ports: LbPortRecord[];
  backends: LbBackendRecord[];
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

/** An immutable parsed state with lookup indexes built on first use. */
export class StateView {
  private byId?: Map<string, InstanceRecord>;
  private byName?: Map<string, InstanceRecord>;
  private lbByName?: Map<string, LoadBalancerRecord>;
  private volById?: Map<string, VolumeRecord>;

  constructor(readonly state: Readonly<LocalCloudState>) {}

  /** The instance with this id, if any. */
  instanceById(id: string): InstanceRecord | undefined {
    this.byId ??= new Map(this.state.instances.map((i) => [i.id, i]));
    return this.byId.get(id);
  }

  /** The instance with this node name, if any. */
  instanceByName(name: string): InstanceRecord | undefined {
    this.byName ??= new Map(this.state.instances.map((i) => [i.name, i]));
    return this.byName.get(name);
  }

  /** The load balancer with this cloud name, if any. */
  loadBalancer(name: string): LoadBalancerRecord | undefined {
    this.lbByName ??= new Map(this.state.loadBalancers.map((lb) => [lb.name, lb]));
    return this.lbByName.get(name);
  }

  /** The volume with this id, if any. */
  volumeById(id: string): VolumeRecord | undefined {
    this.volById ??= new Map(this.state.volumes.map((v) => [v.id, v]));
    return this.volById.get(id);
  }
}

/** Options of {@link StateStore}. */
export interface StateStoreOptions {
  /** Bound on waiting for the cross-process lock, in milliseconds. */
  lockWaitMs?: number;
  /** fsync the state file on every write (default false: durable across process restarts, not power loss). */
  fsync?: boolean;
}

interface CacheEntry {
  key: string;
  mtimeMs: number;
  raw: string;
  view: StateView;
}

/** Reads and writes one state directory. Safe to use from several processes at once. */
export class StateStore {
  /** Absolute state directory. */
  readonly dir: string;
  /** Absolute path of state.json. */
  readonly file: string;
  /** Absolute path of the volume image directory. */
  readonly volumesDir: string;
  private readonly lock: DirLock;
  private readonly fsync: boolean;
  private cache?: CacheEntry;
  private dirReady = false;
  /** Settles when this process's previous update has finished (FIFO turn). */
  private turn: Promise<void> = Promise.resolve();

  constructor(dir: string, opts: StateStoreOptions = {}) {
    if (!dir) throw new TypeError('state directory must not be empty');
    this.dir = resolve(dir);
    this.file = join(this.dir, STATE_FILE);
    this.volumesDir = join(this.dir, VOLUMES_DIR);
    this.lock = new DirLock(join(this.dir, LOCK_DIR), { waitMs: opts.lockWaitMs ?? LOCK_WAIT_MS });
    this.fsync = opts.fsync ?? false;
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

  /** The current state (cached; costs one stat when unchanged). Do not mutate it. */
  view(): StateView {
    let st: Stats | undefined;
    try {
      st = statSync(this.file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (!st) {
      if (this.cache?.key !== 'absent') this.cache = { key: 'absent', mtimeMs: 0, raw: '', view: new StateView(emptyState()) };
      return this.cache.view;
    }
    const key = `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
    const cached = this.cache;
    if (cached && cached.key === key && Date.now() - cached.mtimeMs > RACY_WINDOW_MS) return cached.view;
    const raw = readFileSync(this.file, 'utf8');
    if (cached && cached.raw === raw) {
      this.cache = { ...cached, key, mtimeMs: st.mtimeMs };
      return cached.view;
    }
    const view = new StateView(parseState(raw, this.file));
    this.cache = { key, mtimeMs: st.mtimeMs, raw, view };
    return view;
  }

  /** Shorthand for `view().state`. */
  read(): Readonly<LocalCloudState> {
    return this.view().state;
  }

  /**
   * Read-modify-write under the cross-process lock. `fn` gets a private copy
   * of the current state to modify in place; the copy is written back only
   * if it changed. If `fn` throws, nothing is written and the error
   * propagates. Returns what `fn` returns.
   */
  async update<T>(fn: (draft: LocalCloudState) => T | Promise<T>): Promise<T> {
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

  private updateLocked<T>(fn: (draft: LocalCloudState) => T | Promise<T>): Promise<T> {
    return this.lock.withLock(async () => {
      this.view();
      const raw = this.cache?.raw ?? '';
      const draft = raw ? parseState(raw, this.file) : emptyState();
      const result = await fn(draft);
      const text = JSON.stringify(draft, null, 2) + '\n';
      if (text !== raw) {
        // Synchronous: several times faster than the async variant, and the
        // lock already makes this section exclusive.
        writeFileAtomic.sync(this.file, text, { fsync: this.fsync, mode: 0o644 });
        const st = statSync(this.file);
        this.cache = {
          key: `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`,
          mtimeMs: st.mtimeMs,
          raw: text,
          view: new StateView(parseState(text, this.file)),
        };
      }
      return result;
    });
  }
}

/** Parses and normalizes a state document; throws one clear line on garbage. */
export function parseState(raw: string, file = STATE_FILE): LocalCloudState {
  let doc: unknown;
  try {
    doc = JSON.parse(raw);
  } catch (err) {
    throw new Error(`state file ${file} is not valid JSON: ${(err as Error).message}`);
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
