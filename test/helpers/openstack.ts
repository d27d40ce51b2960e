/**
 * k8s.io/cloud-provider-openstack, unmodified, as a plugin through the bridge
 * (plugins/openstack-bridge), and its stand-in: the few OpenStack APIs its
 * InstancesV2 calls, served by this process on 127.0.0.1 (Keystone v3
 * password authentication with a service catalog; Nova servers; Neutron's
 * version document, ports and extensions). Requests outside that set answer 404 and
 * are recorded, so a test sees what the provider asked that the stand-in
 * does not know.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';

import { providerIdentity } from './provider-identity.js';
import { buildBridgedModule, REPO } from './providers.js';
import type { InstanceHook } from './real-provider-kit.js';

export const OPENSTACK_BRIDGE_DIR = join(REPO, 'plugins', 'openstack-bridge');
/** The provider module the plugin links (plugins/openstack-bridge/go.mod). */
export const OPENSTACK_MODULE = 'k8s.io/cloud-provider-openstack v1.34.1';

/** The plugin, and the upstream CCM with the same provider linked in (for the side-by-side test). */
export interface OpenStackBinaries {
  provider: string;
  upstream: string;
}

let binaries: Promise<OpenStackBinaries> | undefined;

/** What openstackBinaries builds (buildBridgedModule's targets). */
export const OPENSTACK_TARGETS = { 'ccm-provider-openstack': '.', 'upstream-ccm': './cmd/upstream-ccm' } as const;

/** The plugin and the upstream CCM linking the provider, built on first use into the cache (buildBridgedModule). */
export function openstackBinaries(say: (line: string) => void = () => undefined): Promise<OpenStackBinaries> {
  return (binaries ??= buildBridgedModule(
    'openstack',
    OPENSTACK_BRIDGE_DIR,
    OPENSTACK_TARGETS,
    `${OPENSTACK_MODULE} through the bridge and the upstream CCM linking it; the first build compiles gophercloud, client-go and the upstream app: a few minutes`,
    say,
  ).then((out) => ({ provider: out['ccm-provider-openstack']!, upstream: out['upstream-ccm']! })));
}

/** One Nova server as the stand-in serves it. */
export interface StandinServer {
  id: string;
  name: string;
  flavor: string;
  zone: string;
  /** The fixed IP of its one ACTIVE Neutron port. */
  ip: string;
  /** accessIPv4: reported as the ExternalIP. */
  publicIp?: string;
  status: 'ACTIVE' | 'SHUTOFF';
}

export interface OpenStackStandin {
  /** Keystone's v3 URL, the provider's auth-url. */
  authUrl: string;
  region: string;
  user: string;
  password: string;
  project: string;
  servers: Map<string, StandinServer>;
  /** Adds a server named `name`; returns it. */
  addServer(name: string, ip: string, zone?: string): StandinServer;
  /** The conformance kit's test hook (serveTestHook): an ACTIVE server named like the kit's node, providerID openstack:///<id>. */
  instanceHook: InstanceHook;
  /** Requests the stand-in does not serve ("METHOD path"), at most 100. */
  unknown: string[];
  stop(): Promise<void>;
}

const MAX_BODY = 64 * 1024;

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > MAX_BODY) throw new Error('request body over 64 KiB');
    chunks.push(c);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Starts the stand-in on 127.0.0.1 (port 0). */
export async function startOpenStackStandin(): Promise<OpenStackStandin> {
  const region = 'RegionOne';
  const user = 'ccm';
  const password = randomUUID();
  const project = 'kubernetes';
  const projectId = randomUUID().replaceAll('-', '');
  const token = randomUUID();
  const servers = new Map<string, StandinServer>();
  const unknown: string[] = [];
  let base = '';

  const novaServer = (s: StandinServer) => ({
    id: s.id,
    name: s.name,
    status: s.status,
    tenant_id: projectId,
    user_id: user,
    metadata: {},
    flavor: { original_name: s.flavor, vcpus: 1, ram: 2048, disk: 20 },
    addresses: { private: [{ addr: s.ip, version: 4, 'OS-EXT-IPS:type': 'fixed', 'OS-EXT-IPS-MAC:mac_addr': 'fa:16:3e:00:00:01' }] },
    accessIPv4: s.publicIp ?? '',
    accessIPv6: '',
    'OS-EXT-AZ:availability_zone': s.zone,
    'OS-EXT-STS:power_state': s.status === 'ACTIVE' ? 1 : 4,
    created: '2026-01-01T00:00:00Z',
    updated: '2026-01-01T00:00:00Z',
  });
  const port = (s: StandinServer) => ({
    id: `port-${s.id}`,
    name: '',
    status: 'ACTIVE',
    admin_state_up: true,
    network_id: 'net-private',
    device_id: s.id,
    device_owner: 'compute:nova',
    mac_address: 'fa:16:3e:00:00:01',
    fixed_ips: [{ subnet_id: 'subnet-private', ip_address: s.ip }],
    tenant_id: projectId,
    project_id: projectId,
  });

  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://standin');
      const path = url.pathname.replace(/\/+$/, '');
      const authed = req.headers['x-auth-token'] === token;
      if (req.method === 'POST' && path === '/v3/auth/tokens') {
        const body = JSON.parse(await readBody(req)) as {
          auth?: { identity?: { password?: { user?: { name?: string; password?: string } } } };
        };
        const u = body.auth?.identity?.password?.user;
        if (u?.name !== user || u?.password !== password)
          return send(res, 401, { error: { code: 401, message: 'The request you have made requires authentication.' } });
        const endpoint = (type: string, name: string, path: string) => ({
          type,
          name,
          id: `${name}-id`,
          endpoints: ['public', 'internal', 'admin'].map((iface) => ({
            id: `${name}-${iface}`,
            interface: iface,
            region,
            region_id: region,
            url: `${base}${path}`,
          })),
        });
        return send(
          res,
          201,
          {
            token: {
              methods: ['password'],
              expires_at: new Date(Date.now() + 24 * 3600_000).toISOString(),
              issued_at: new Date().toISOString(),
              user: { id: user, name: user, domain: { id: 'default', name: 'Default' } },
              project: { id: projectId, name: project, domain: { id: 'default', name: 'Default' } },
              roles: [{ id: 'member', name: 'member' }],
              catalog: [
                endpoint('identity', 'keystone', '/v3'),
                endpoint('compute', 'nova', '/compute/v2.1'),
                endpoint('network', 'neutron', '/network'),
              ],
            },
          },
          { 'x-subject-token': token },
        );
      }
      // Neutron's version document (its catalog URL has no version, so clients discover it).
      if (req.method === 'GET' && path === '/network')
        return send(res, 200, { versions: [{ id: 'v2.0', status: 'CURRENT', links: [{ rel: 'self', href: `${base}/network/v2.0/` }] }] });
      if (!authed) return send(res, 401, { error: { code: 401, message: 'no valid X-Auth-Token' } });
      let m: RegExpExecArray | null;
      if (req.method === 'GET' && (m = /^\/compute\/v2\.1\/servers\/([^/]+)$/.exec(path)) && m[1] !== 'detail') {
        const s = servers.get(decodeURIComponent(m[1]!));
        return s
          ? send(res, 200, { server: novaServer(s) })
          : send(res, 404, { itemNotFound: { code: 404, message: 'Instance could not be found.' } });
      }
      if (req.method === 'GET' && path === '/compute/v2.1/servers/detail') {
        // Nova's name filter is a regular expression; the provider sends ^<quoted name>$.
        const filter = url.searchParams.get('name');
        const re = filter ? new RegExp(filter) : undefined;
        return send(res, 200, { servers: [...servers.values()].filter((s) => !re || re.test(s.name)).map(novaServer), servers_links: [] });
      }
      if (req.method === 'GET' && path === '/network/v2.0/ports') {
        const device = url.searchParams.get('device_id');
        return send(res, 200, { ports: [...servers.values()].filter((s) => !device || s.id === device).map(port) });
      }
      if (req.method === 'GET' && path === '/network/v2.0/extensions') return send(res, 200, { extensions: [] });
      if (unknown.length < 100) unknown.push(`${req.method} ${path}`);
      return send(res, 404, { NeutronError: { type: 'HTTPNotFound', message: `the stand-in does not serve ${req.method} ${path}` } });
    })().catch((err: Error) => send(res, 400, { error: { code: 400, message: err.message } }));
  });
  function addServer(name: string, ip: string, zone = 'nova-az1'): StandinServer {
    const s: StandinServer = { id: randomUUID(), name, flavor: 'm1.small', zone, ip, status: 'ACTIVE' };
    servers.set(s.id, s);
    return s;
  }
  const named = (name: string) => [...servers.values()].filter((s) => s.name === name);
  let hookServers = 0;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    authUrl: `${base}/v3`,
    region,
    user,
    password,
    project,
    servers,
    unknown,
    addServer,
    instanceHook: {
      // 10.0.1.x: apart from the addresses tests give addServer.
      createInstance: async (name) => `openstack:///${(named(name)[0] ?? addServer(name, `10.0.1.${10 + (hookServers++ % 240)}`)).id}`,
      deleteInstance: async (name) => named(name).forEach((s) => servers.delete(s.id)),
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The provider's own cloud config (INI) for the stand-in; its load balancer (Octavia) is switched off. */
export function openstackCloudConfig(s: OpenStackStandin): string {
  return [
    '[Global]',
    `auth-url=${s.authUrl}`,
    `username=${s.user}`,
    `password=${s.password}`,
    `tenant-name=${s.project}`,
    'domain-name=Default',
    `region=${s.region}`,
    '',
    '[LoadBalancer]',
    'enabled=false',
    '',
  ].join('\n');
}

/** The OpenStack provider's own identity in `namespace`: what its Initialize and SetInformers use, a Node informer and an event recorder. */
export function openstackProviderIdentity(admin: KubeConfig, namespace: string): Promise<KubeConfig> {
  return providerIdentity(admin, namespace, 'openstack-cloud-provider', {
    cluster: [
      { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch', 'update'] },
    ],
  });
}
