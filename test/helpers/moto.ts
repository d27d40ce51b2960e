/**
 * moto (https://github.com/getmoto/moto), a local stand-in for the AWS APIs,
 * as a real server process for tests of k8s.io/cloud-provider-aws through
 * the bridge (test/integration/providers/aws-bridge.test.ts):
 *   ~/.cache/ccm-host/providers/moto-<version>-<hash of the Python version and the pin>/venv
 *     (`moto[server]` from PyPI at MOTO_VERSION, with boto3, which it depends on)
 * startMoto runs moto's server (through test/helpers/moto-server.py, which
 * gives new classic load balancers AWS's default health check, as AWS does
 * and moto does not) on 127.0.0.1 on a free port; one server serves EC2, ELB
 * and ELBv2 (it dispatches on the SigV4 service of each request). test/helpers/moto-aws.py drives it with boto3 (seeding,
 * stopping and terminating instances, describing load balancers).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CoreV1Api } from '@kubernetes/client-node';
import type { ExecutionContext } from 'ava';
import { execa, type ResultPromise } from 'execa';
import { freePorts, get } from '../controlplane/probe.js';
import { buildOnce } from './build-once.js';
import { deleteScopedNodes } from './nodes.js';
import { waitFor } from './wait.js';

/**
 * The environment of an AWS client (a provider, upstream's CCM) pointed at
 * moto: its dummy credentials, IMDS off, and every endpoint but the ones the
 * cloud config names fails on a closed local port, so nothing leaves the machine.
 */
export const MOTO_CLIENT_ENV: Readonly<Record<string, string>> = Object.freeze({
  AWS_ACCESS_KEY_ID: 'test',
  AWS_SECRET_ACCESS_KEY: 'test',
  AWS_EC2_METADATA_DISABLED: 'true',
  HTTP_PROXY: 'http://127.0.0.1:9',
  HTTPS_PROXY: 'http://127.0.0.1:9',
});

export const MOTO_VERSION = '5.2.5';
const MOTO_REQUIREMENT = `moto[server]==${MOTO_VERSION}`;
const SCRIPT = fileURLToPath(new URL('../../../test/helpers/moto-aws.py', import.meta.url));
const SERVER = fileURLToPath(new URL('../../../test/helpers/moto-server.py', import.meta.url));

let venv: Promise<string> | undefined;

/** The cache directory of the moto venv: the interpreter's version and the pin. */
export async function motoVenvDir(): Promise<string> {
  const version = (await execa(process.env.CCM_TEST_PYTHON || 'python3', ['--version'])).stdout.trim();
  const key = createHash('sha256').update(`${version}\0${MOTO_REQUIREMENT}`).digest('hex').slice(0, 12);
  const root = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'ccm-host', 'providers');
  return join(root, `moto-${MOTO_VERSION}-${key}`);
}

/** The Python interpreter of a venv with moto[server] installed (pip on first use, into motoVenvDir). */
export function motoPython(say: (line: string) => void = () => undefined): Promise<string> {
  return (venv ??= (async () => {
    const base = process.env.CCM_TEST_PYTHON || 'python3';
    const dir = await motoVenvDir();
    await buildOnce(dir, async (tmp) => {
      const t0 = Date.now();
      say(`installing ${MOTO_REQUIREMENT} from PyPI into ${dir} (about a minute the first time)`);
      await execa(base, ['-m', 'venv', join(tmp, 'venv')]);
      await execa(join(tmp, 'venv', 'bin', 'python'), ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', MOTO_REQUIREMENT]);
      say(`moto installed in ${Math.round((Date.now() - t0) / 1000)} s`);
    });
    return join(dir, 'venv', 'bin', 'python');
  })());
}

export interface Moto {
  /** http://127.0.0.1:<port> */
  endpoint: string;
  region: string;
  /** Runs one command of moto-aws.py against this server and returns its JSON answer. */
  ctl<T = unknown>(command: string, arg?: unknown): Promise<T>;
  stop(): Promise<void>;
}

/** A process environment with nothing of the caller's AWS settings, credentials or proxies. */
function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', AWS_EC2_METADATA_DISABLED: 'true' };
  if (process.env.HOME) env.HOME = process.env.HOME;
  return env;
}

export interface MotoOptions {
  /** The fixes of moto-server.py (default true); false: moto as it is, e.g. to see what a provider does on its differences. */
  fidelityFixes?: boolean;
  /** Journal every API request into this file (moto-server.py, 6); read it with motoJournal. */
  journal?: string;
}

/** One API request as moto-server.py journals it. */
export interface MotoCall {
  /** The SigV4 service name (ec2, elasticloadbalancing, ...). */
  service: string;
  action: string;
  /** The access key id the request was signed with. */
  caller: string;
  status: number;
  /** The load balancer the request names ('' if none): a classic ELB's name, or an NLB's from the ARN of it, its listener or its target group. */
  name: string;
  /** Every security group id the request names (a group it changes, a rule's source, a load balancer's groups), sorted. */
  groups: string[];
}

/** The requests journaled so far (moto-server.py, 6), oldest first; [] before the first. */
export async function motoJournal(path: string): Promise<MotoCall[]> {
  const text = await readFile(path, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return '';
    throw err;
  });
  // The last line may still be being written.
  return text
    .split('\n')
    .slice(0, -1)
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as MotoCall);
}

/** Whether an AWS API action changes something (everything but Describe*, Get*, List*). */
export function mutating(call: MotoCall): boolean {
  return !/^(Describe|Get|List)/.test(call.action);
}

/**
 * Whether the moto at `endpoint` serves and is the one started with
 * CCM_TEST_MOTO_ID=`id` (moto-server.py, 12), not another test's on the same port.
 */
export async function motoAnswersAs(endpoint: string, id: string): Promise<boolean> {
  const r = await get(`${endpoint}/moto-api/`, { timeoutMs: 2_000 });
  return r.status === 200 && r.headers['x-ccm-test-moto-id'] === id;
}

/**
 * Starts a moto server for `region` on 127.0.0.1 (a free port; retried
 * when another process took it first: the readiness probe checks the server's
 * id, so a server of another test on that port is never taken for ours). Its log goes to `<dir>/moto.log`.
 */
export async function startMoto(dir: string, region = 'us-east-1', opts: MotoOptions = {}): Promise<Moto> {
  const python = await motoPython();
  const log = join(dir, 'moto.log');
  for (let attempt = 1; ; attempt++) {
    const [port] = (await freePorts(1)) as [number];
    const endpoint = `http://127.0.0.1:${port}`;
    const id = randomBytes(8).toString('hex');
    const child: ResultPromise = execa(python, [SERVER, '-H', '127.0.0.1', '-p', String(port)], {
      env: {
        ...cleanEnv(),
        ...(opts.fidelityFixes === false ? { CCM_TEST_MOTO_AS_IS: '1' } : {}),
        ...(opts.journal ? { CCM_TEST_MOTO_JOURNAL: opts.journal } : {}),
        CCM_TEST_MOTO_ID: id,
      },
      extendEnv: false,
      stdin: 'ignore',
      stdout: { file: log, append: true },
      stderr: { file: log, append: true },
      reject: false,
    });
    let exited = false;
    void child.then(() => (exited = true));
    try {
      // 'exited' ends the wait at once (waitFor would take a throw for a transient error and keep polling).
      const ready = await waitFor(async () => (exited ? 'exited' : (await motoAnswersAs(endpoint, id)) && 'ours'), {
        what: `moto server on ${endpoint}`,
        timeoutMs: 60_000,
        intervalMs: 200,
        log,
      });
      // Another test's moto on the port answers too, but without our id; ours exits (address in use): a new port.
      if (ready === 'exited') throw new Error(`moto exited (see ${log})`);
    } catch (err) {
      child.kill('SIGKILL');
      await child;
      if (exited && attempt < 3) continue; // the port was taken: another one
      throw err;
    }
    const stop = async () => {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await child;
      clearTimeout(t);
    };
    return {
      endpoint,
      region,
      async ctl<T>(command: string, arg: unknown = {}) {
        const res = await execa(python, [SCRIPT, endpoint, region, command, JSON.stringify(arg)], {
          env: cleanEnv(),
          extendEnv: false,
          timeout: 60_000,
        });
        return JSON.parse(res.stdout) as T;
      },
      stop,
    };
  }
}

/** One instance as moto-aws.py shows it. */
export interface MotoInstance {
  id: string;
  privateIp: string;
  privateDns: string;
}

/** A cluster's network and instances as moto-aws.py's `seed` makes them. */
export interface MotoSeeded {
  vpc: string;
  subnet: string;
  securityGroup: string;
  az: string;
  zoneId: string;
  instances: MotoInstance[];
}

/** What `seedCluster` uses unless told otherwise. */
export const SEED_DEFAULTS = Object.freeze({ az: 'us-east-1a', type: 't3.medium' });

export interface SeedOptions {
  /** The cluster id the VPC, subnet, route table, nodes' group and instances are tagged as owned by. */
  cluster: string;
  instances: number;
  /** The VPC is 10.<net>.0.0/16: a number of the test's own, so that tests sharing a moto never overlap. */
  net: number;
  /** Default us-east-1a. */
  az?: string;
  /** Default t3.medium. */
  type?: string;
}

/** Seeds a cluster at moto (moto-aws.py `seed`): its VPC with an internet gateway, one subnet, the nodes' security group and running instances. */
export function seedCluster(moto: Moto, opts: SeedOptions): Promise<MotoSeeded> {
  const { cluster, instances, net, az = SEED_DEFAULTS.az, type = SEED_DEFAULTS.type } = opts;
  return moto.ctl<MotoSeeded>('seed', { cluster, az, instances, type, net });
}

/** The provider's cloud config: every AWS API it uses at moto, the "machine" it runs on given instead of read from IMDS. */
export function awsCloudConfig(moto: Moto, seeded: { vpc: string; subnet: string }, clusterId: string): string {
  const override = (n: number, service: string) =>
    `[ServiceOverride "${n}"]\nService = ${service}\nRegion = ${moto.region}\nURL = ${moto.endpoint}\nSigningRegion = ${moto.region}\n`;
  return [
    `[Global]\nRegion = ${moto.region}\nVPC = ${seeded.vpc}\nSubnetID = ${seeded.subnet}\nKubernetesClusterID = ${clusterId}\n`,
    // The SDK v2 ServiceIDs, case-sensitive: "ec2" would pass validation and override nothing.
    override(1, 'EC2'),
    override(2, 'Elastic Load Balancing'),
    override(3, 'Elastic Load Balancing v2'),
  ].join('\n');
}

/**
 * A moto of one test with the test's cluster seeded (one instance unless
 * told otherwise): when the test ends, the Nodes of `scope` are deleted and
 * moto stops.
 */
export async function seededMotoFor(
  t: ExecutionContext,
  core: CoreV1Api,
  scope: { prefix: string; selector: string },
  opts: { tmpPrefix: string; net: number; instances?: number },
): Promise<{ dir: string; moto: Moto; seeded: MotoSeeded }> {
  const dir = await mkdtemp(join(tmpdir(), opts.tmpPrefix));
  const moto = await startMoto(dir, 'us-east-1');
  t.teardown(async () => {
    await deleteScopedNodes(core, scope.selector);
    await moto.stop();
  });
  const seeded = await seedCluster(moto, { cluster: scope.prefix, instances: opts.instances ?? 1, net: opts.net });
  return { dir, moto, seeded };
}

/** A Service or Ingress the AWS Load Balancer Controller serves, as seedLbController makes its AWS resources. */
export interface LbControllerStack {
  /** `<namespace>/<name>` (the controller's stack id). */
  stack: string;
  scheme: 'internet-facing' | 'internal';
  /** instance: the target group holds the instances (on a node port); ip: the given pod IPs. */
  targetType: 'instance' | 'ip';
  targets?: string[];
  /** instance targets: the Service's node port (the API server's, so no other Service's rules can share it). */
  nodePort?: number;
}

/** What seedLbController made: the controller's resources, by id and name. */
export interface LbControllerSeeded {
  /** Its shared backend security group (elbv2.k8s.aws/resource=backend-sg). */
  backendGroup: string;
  /** Every security group it made (the backend one and each load balancer's). */
  groups: string[];
  /** Each stack's load balancer. */
  loadBalancers: Record<string, { name: string; dns: string; arn: string }>;
  targetGroups: string[];
}

/**
 * What the AWS Load Balancer Controller (kubernetes-sigs/aws-load-balancer-controller)
 * keeps in a cluster's account, made at moto as it names and tags it
 * (moto-aws.py seed-lb-controller): an ALB for the Ingress `ingress` and an NLB
 * for each of `services`, with their security groups, listeners, target
 * groups of the cluster's `instances` (or pod IPs), and its rules on the
 * nodes' security group. Instance target groups listen on node ports the
 * caller takes from real Services: a port made up here can equal one the API
 * server gives another Service, and then AWS merges both Services' rules into
 * one permission, which no real cluster can do. Neither the upstream AWS CCM nor ours may touch any
 * of it.
 */
export function seedLbController(
  moto: Moto,
  seeded: MotoSeeded,
  opts: { cluster: string; subnets: string[]; ingress: string; ingressNodePort: number; services: LbControllerStack[] },
): Promise<LbControllerSeeded> {
  const missing = opts.services.filter((s) => s.targetType === 'instance' && s.nodePort === undefined);
  if (missing.length > 0)
    throw new Error(`seedLbController: instance targets need the Service's node port: ${missing.map((s) => s.stack).join(', ')}`);
  return moto.ctl<LbControllerSeeded>('seed-lb-controller', {
    cluster: opts.cluster,
    vpc: seeded.vpc,
    subnets: opts.subnets,
    nodesGroup: seeded.securityGroup,
    instances: seeded.instances.map((i) => i.id),
    ingress: opts.ingress,
    ingressNodePort: opts.ingressNodePort,
    services: opts.services.map((s) => ({ ...s, targets: s.targets ?? [] })),
  });
}
