/**
 * API request cost against a real kube-apiserver (TLS, bearer token): 1,000
 * GETs through client-node's own `makeApiClient` (its default: a new
 * `https.Agent`, hence a new TCP+TLS connection, per request) and through the
 * host's clients (`makeClients`), counting the connections opened, latency,
 * and this process's CPU per request. The benchmark process does nothing
 * else meanwhile, so its CPU time is the client's.
 */
import dc from 'node:diagnostics_channel';
import https from 'node:https';
import type { ClientRequest } from 'node:http';
import type { Socket } from 'node:net';
import { CoreV1Api } from '@kubernetes/client-node';
import { execa } from 'execa';
import { ConnectionPool } from '../../host/kube/connections.js';
import { makeClients } from '../../host/kube/client.js';
import { f2, f3, int, type BenchSection } from './section.js';
import { percentile } from './stats.js';
import { clientBenchOf, ensureUpstreamCcm } from '../helpers/upstream-ccm.js';

const REQUESTS = 1000;
/** Enough for V8 to have optimized the request path (with 50, the first hundreds of timed requests still ran unoptimized code). */
const WARMUP = 500;
/** Rounds per contender; each row shows its round of median CPU. */
const ROUNDS = 3;
/** High enough that the client-side limiter never delays a request here. */
const UNTHROTTLED = 1_000_000;

export interface ApiRequestFigures {
  client: string;
  concurrency: number;
  requests: number;
  connections: number;
  meanMs: number;
  p50Ms: number;
  p99Ms: number;
  cpuMsPerRequest: number;
}

/** Counts the distinct sockets HTTP requests of this process go out on (= connections opened). */
function countConnections(): { count(): number; stop(): void } {
  const seen = new WeakSet<Socket>();
  let n = 0;
  const note = (s: Socket) => {
    if (!seen.has(s)) {
      seen.add(s);
      n++;
    }
  };
  const onStart = (msg: unknown) => {
    const request = (msg as { request: ClientRequest }).request;
    if (request.socket) note(request.socket);
    else request.once('socket', note);
  };
  dc.subscribe('http.client.request.start', onStart);
  return { count: () => n, stop: () => dc.unsubscribe('http.client.request.start', onStart) };
}

async function measure(client: string, get: () => Promise<unknown>, concurrency: number): Promise<ApiRequestFigures> {
  for (let i = 0; i < WARMUP; i++) await get();
  const connections = countConnections();
  const latencies: number[] = [];
  let started = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (started < REQUESTS) {
        started++;
        const s = performance.now();
        await get();
        latencies.push(performance.now() - s);
      }
    }),
  );
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  connections.stop();
  latencies.sort((a, b) => a - b);
  return {
    client,
    concurrency,
    requests: latencies.length,
    connections: connections.count(),
    meanMs: (wallMs * concurrency) / latencies.length,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    cpuMsPerRequest: (cpu.user + cpu.system) / 1000 / latencies.length,
  };
}

export const apiRequestsSection: BenchSection = {
  name: 'api-requests',
  async run(ctx) {
    const cp = await ctx.controlPlane();
    const kc = cp.kubeConfig();
    const plain = kc.makeApiClient(CoreV1Api);
    const connections = new ConnectionPool();
    const { rest } = makeClients(kc, { qps: UNTHROTTLED, burst: UNTHROTTLED, userAgent: 'bench', connections });
    const host = { readNamespace: (name: string) => rest.request('GET', `/api/v1/namespaces/${name}`) };
    // The runtime's floor: node:https on the host's pooled keep-alive agent, prepared once, no client code around it.
    const floor = await rest.prepare('/api/v1/namespaces/default', undefined, 'request');
    const rawGet = () =>
      new Promise<unknown>((resolve, reject) => {
        const req = https.request(floor.url, { headers: { ...floor.headers, Accept: 'application/json' }, agent: floor.agent }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end();
      });
    const clientBench = clientBenchOf(await ensureUpstreamCcm((l) => ctx.log(l)));
    const clientGo = async (concurrency: number) => {
      const { stdout } = await execa(clientBench, ['get', cp.kubeconfigPath, String(REQUESTS), String(WARMUP), String(concurrency)]);
      return JSON.parse(stdout.trim()) as ApiRequestFigures;
    };
    const contenders: { name: string; concurrency: number; run(): Promise<ApiRequestFigures> }[] = [
      ['host makeClients', () => host.readNamespace('default'), 1] as const,
      ['host makeClients', () => host.readNamespace('default'), 16] as const,
      ['node:https alone (the floor)', rawGet, 1] as const,
      ['node:https alone (the floor)', rawGet, 16] as const,
    ].map(([name, get, concurrency]) => ({ name, concurrency, run: () => measure(name, get, concurrency) }));
    for (const concurrency of [1, 16]) contenders.push({ name: 'client-go', concurrency, run: () => clientGo(concurrency) });
    // Rounds, each contender once per round, and each row the round of median CPU: a burst of other work
    // on the machine then moves one round of one row, not the comparison.
    const rounds: ApiRequestFigures[][] = contenders.map(() => []);
    try {
      for (let round = 1; round <= ROUNDS; round++) {
        for (const [i, c] of contenders.entries()) {
          ctx.log(`api-requests: round ${round}/${ROUNDS}, ${c.name}, ${c.concurrency} concurrent`);
          rounds[i].push(await c.run());
        }
      }
      // Once, after the rounds: its thousand TLS handshakes leave garbage whose collection would be charged to
      // whichever client ran next.
      ctx.log('api-requests: client-node makeApiClient, 1 concurrent');
      rounds.push([await measure('client-node makeApiClient', () => plain.readNamespace({ name: 'default' }), 1)]);
    } finally {
      connections.destroy();
    }
    const rows = rounds.map((r) => [...r].sort((x, y) => x.cpuMsPerRequest - y.cpuMsPerRequest)[Math.floor(r.length / 2)]);
    const markdown = `## API request cost

${int(REQUESTS)} GETs of Namespace \`default\` against the real kube-apiserver (TLS, bearer token) from the benchmark
process, after ${WARMUP} untimed ones, in ${ROUNDS} rounds (every client once per round; each row is its round of median CPU; client-node's default, one
connection per request, once after the rounds); the client-side limiter is set high enough never to delay. Connections are the
distinct sockets the requests went out on; CPU is the client process's user+system time per request. Upstream:
client-go, the client the upstream CCM is built on, making the same requests from a Go process of its own
(\`tools/upstream-ccm/cmd/client-bench\`, connections counted at its dialer), one after the other with ours on the
same control plane. "node:https alone" is Node's own HTTP client on the host's keep-alive agent with nothing of
ours around it: what any Node client pays per request.

| client | concurrent | requests | connections opened | mean (ms) | p50 (ms) | p99 (ms) | client CPU per request (ms) |
|---|---|---|---|---|---|---|---|
${rows.map((r) => `| ${r.client} | ${r.concurrency} | ${int(r.requests)} | **${int(r.connections)}** | ${f2(r.meanMs)} | ${f2(r.p50Ms)} | ${f2(r.p99Ms)} | **${f3(r.cpuMsPerRequest)}** |`).join('\n')}
`;
    return { markdown, figures: { settings: { requests: REQUESTS, warmup: WARMUP, rounds: ROUNDS }, rows } };
  },
};
