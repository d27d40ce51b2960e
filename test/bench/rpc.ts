/**
 * Host → plugin RPC overhead: the local cloud plugin runs as a separate
 * process (compiled JS) behind the real supervisor and connection; the host
 * side calls it over the Unix socket. A plain grpc-js client/server pair on
 * the same machine is measured as the baseline.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { credentials, Metadata } from '@grpc/grpc-js';
import { execa } from 'execa';
import { IdentityServiceClient } from '../../proto/gen/ccm/provider/v1/identity.js';
import { silentLogger } from '../../host/log.js';
import { GrpcCloud } from '../../host/plugin/grpc-cloud.js';
import { PluginSupervisor } from '../../host/plugin/supervisor.js';
import { ALLOW_SIMULATION, LOCAL_PLUGIN, localcloud } from '../helpers/localcloud.js';
import { f1, f3, int, type BenchSection } from './section.js';
import { load, percentile, type LoadResult } from './stats.js';

const PLAIN_SERVER = fileURLToPath(new URL('./plain-server.js', import.meta.url));
const BATCH_NODES = 500;

export interface RpcFigures {
  plainC1: LoadResult;
  plainC64: LoadResult;
  hostProbeC1: LoadResult;
  hostProbeC64: LoadResult;
  hostMetadataC1: LoadResult;
  hostMetadataC64: LoadResult;
  batch500: { iterations: number; p50Ms: number; p99Ms: number };
}

export async function benchRpc(log: (s: string) => void): Promise<RpcFigures> {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-bench-rpc-'));
  const state = join(dir, 'cloud');
  const names = Array.from({ length: BATCH_NODES }, (_, i) => `bench-${i}`);
  await localcloud(state, 'instance', 'add', ...names);

  // Baseline: plain grpc-js server and client, no SDK, no host wrapper.
  const socket = join(dir, 'plain.sock');
  const plain = execa(process.execPath, [PLAIN_SERVER, socket], { stdin: 'pipe', reject: false });
  await new Promise<void>((resolve) => plain.stdout!.once('data', () => resolve()));
  const client = new IdentityServiceClient(`unix://${socket}`, credentials.createInsecure());
  const plainProbe = () =>
    new Promise<void>((resolve, reject) => client.probe({}, new Metadata(), { deadline: Date.now() + 10_000 }, (e) => (e ? reject(e) : resolve())));
  log('rpc: plain grpc-js pair');
  const plainC1 = await load(plainProbe, { concurrency: 1, calls: 5000 });
  const plainC64 = await load(plainProbe, { concurrency: 64, calls: 20000 });
  client.close();
  plain.stdin!.end();
  await plain;

  const sup = new PluginSupervisor({
    name: 'local',
    mode: { kind: 'exec', path: LOCAL_PLUGIN, env: [`LOCALCLOUD_STATE_DIR=${state}`, ALLOW_SIMULATION] },
    startTimeoutMs: 30_000,
    shutdownGraceMs: 5_000,
    configure: { cloudConfig: Buffer.alloc(0), clusterName: 'bench', hostVersion: 'bench' },
    log: silentLogger(),
  });
  await sup.start();
  try {
    const conn = sup.connection();
    const cloud = new GrpcCloud(sup, { readMs: 10_000, mutateMs: 60_000 });
    const instances = cloud.instances()!;
    const probe = () => conn.unary(conn.identity, 'Probe', {}, 10_000);
    const node = { name: 'bench-7', addresses: [], labels: {} };
    const metadata = () => instances.instanceMetadata(node);
    log('rpc: host → local plugin');
    const hostProbeC1 = await load(probe, { concurrency: 1, calls: 5000 });
    const hostProbeC64 = await load(probe, { concurrency: 64, calls: 20000 });
    const hostMetadataC1 = await load(metadata, { concurrency: 1, calls: 5000 });
    const hostMetadataC64 = await load(metadata, { concurrency: 64, calls: 20000 });

    log('rpc: 500-node batch');
    const refs = names.map((name) => ({ name, addresses: [], labels: {} }));
    const batchTimes: number[] = [];
    for (let i = 0; i < 60; i++) {
      const s = process.hrtime.bigint();
      const results = await instances.instancesMetadata(refs);
      const ms = Number(process.hrtime.bigint() - s) / 1e6;
      if (results.some((r) => !r.metadata)) throw new Error('batch had failures');
      if (i >= 10) batchTimes.push(ms); // the first ten are warm-up
    }
    batchTimes.sort((a, b) => a - b);
    return {
      plainC1,
      plainC64,
      hostProbeC1,
      hostProbeC64,
      hostMetadataC1,
      hostMetadataC64,
      batch500: { iterations: batchTimes.length, p50Ms: percentile(batchTimes, 50), p99Ms: percentile(batchTimes, 99) },
    };
  } finally {
    await sup.stop();
  }
}

function rpcRow(name: string, r: LoadResult): string {
  return `| ${name} | ${int(r.calls)} | ${f3(r.p50Ms)} | ${f3(r.p99Ms)} | ${int(r.callsPerSecond)} |`;
}

export const rpcSection: BenchSection = {
  name: 'rpc',
  async run(ctx) {
    const rpc = await benchRpc(ctx.log);
    return `## Host → plugin RPC over the Unix socket

The local cloud plugin runs as a separate process (compiled JS, started by the
host's supervisor); calls go through the host's connection layer (deadline,
in-flight tracking, error mapping, metrics) and, for InstanceMetadata, the
response validation. Baseline: a plain grpc-js client and server (no SDK, no
host layer) on the same machine. Latency is per call as seen by the caller.
No upstream column: the upstream CCM calls its provider in-process (a Go method call), so it has
no such boundary; the sections below that run it put its forwarding provider's RPCs on its side.

| call | calls | p50 ms | p99 ms | calls/s |
|---|---|---|---|---|
${rpcRow('plain grpc-js Probe, concurrency 1', rpc.plainC1)}
${rpcRow('plain grpc-js Probe, concurrency 64', rpc.plainC64)}
${rpcRow('host → plugin Probe, concurrency 1', rpc.hostProbeC1)}
${rpcRow('host → plugin Probe, concurrency 64', rpc.hostProbeC64)}
${rpcRow('host → plugin InstanceMetadata (validated), concurrency 1', rpc.hostMetadataC1)}
${rpcRow('host → plugin InstanceMetadata (validated), concurrency 64', rpc.hostMetadataC64)}

500-node batch InstanceMetadata (GetInstancesMetadata, validated per item):
p50 **${f1(rpc.batch500.p50Ms)} ms**, p99 ${f1(rpc.batch500.p99Ms)} ms over ${rpc.batch500.iterations} calls.

Targets (issue 3): p50 ≤ 1 ms per unary call, ≥ 3,000 calls/s at concurrency 64, the 500-node batch ≤ 50 ms.
`;
  },
};
