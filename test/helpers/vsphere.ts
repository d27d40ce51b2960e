/**
 * k8s.io/cloud-provider-vsphere, unmodified, as a plugin through the bridge
 * (plugins/vsphere-bridge), and its stand-in: govmomi's vCenter simulator
 * run in process by plugins/vsphere-bridge/cmd/vcsim on 127.0.0.1.
 */
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { execa, type ResultPromise } from 'execa';
import { providerIdentity } from './provider-identity.js';
import { shellCommand } from './real-provider-kit.js';
import { buildBridgedModule, REPO } from './providers.js';

export const VSPHERE_BRIDGE_DIR = join(REPO, 'plugins', 'vsphere-bridge');
/** The provider module the plugin links (plugins/vsphere-bridge/go.mod). */
export const VSPHERE_MODULE = 'k8s.io/cloud-provider-vsphere v1.36.0';

/** The plugin, the simulator and its test hook, and the upstream CCM with the same provider linked in (for the side-by-side test). */
export interface VsphereBinaries {
  provider: string;
  vcsim: string;
  /** The conformance kit's test hook against a running vcsim (cmd/vcsim-hook). */
  vcsimHook: string;
  upstream: string;
}

let binaries: Promise<VsphereBinaries> | undefined;

/** What vsphereBinaries builds (buildBridgedModule's targets). */
export const VSPHERE_TARGETS = {
  'ccm-provider-vsphere': '.',
  vcsim: './cmd/vcsim',
  'vcsim-hook': './cmd/vcsim-hook',
  'upstream-ccm': './cmd/upstream-ccm',
} as const;

/** The plugin, vcsim, its hook and the upstream CCM linking the provider, built on first use into the cache (buildBridgedModule). */
export function vsphereBinaries(say: (line: string) => void = () => undefined): Promise<VsphereBinaries> {
  return (binaries ??= buildBridgedModule(
    'vsphere',
    VSPHERE_BRIDGE_DIR,
    VSPHERE_TARGETS,
    `${VSPHERE_MODULE} through the bridge, its simulator and the upstream CCM linking it; the first build compiles client-go v0.36, govmomi and the upstream app: several minutes`,
    say,
  ).then((out) => ({ provider: out['ccm-provider-vsphere']!, vcsim: out.vcsim!, vcsimHook: out['vcsim-hook']!, upstream: out['upstream-ccm']! })));
}

/** One simulated VM: its guest hostname (the Node's name), BIOS UUID and guest IP. */
export interface VcsimVm {
  name: string;
  uuid: string;
  ip: string;
}

export interface Vcsim {
  server: string;
  port: string;
  user: string;
  password: string;
  datacenter: string;
  vms: VcsimVm[];
  /** The conformance kit's --test-hook-command for this simulator: makes and destroys VMs through its vSphere API (cmd/vcsim-hook). */
  hookCommand: string;
  /** poweroff, poweron or destroy a VM by guest hostname, through the vSphere API. */
  command(verb: 'poweroff' | 'poweron' | 'destroy', name: string): Promise<void>;
  stop(): Promise<void>;
}

/** Starts a vCenter simulator whose VMs are named `<prefix><i>` (valid Node names). */
export async function startVcsim(prefix: string): Promise<Vcsim> {
  const { vcsim, vcsimHook } = await vsphereBinaries();
  const child: ResultPromise = execa(vcsim, [`--hostname-prefix=${prefix}`], { stdin: 'pipe', stdout: 'pipe', stderr: 'inherit', reject: false });
  const lines = createInterface({ input: child.stdout! });
  const pending: ((line: string) => void)[] = [];
  const queued: string[] = [];
  lines.on('line', (line) => {
    const next = pending.shift();
    if (next) next(line);
    else queued.push(line);
  });
  const nextLine = (what: string) =>
    new Promise<string>((resolve, reject) => {
      const line = queued.shift();
      if (line !== undefined) return resolve(line);
      const timer = setTimeout(() => reject(new Error(`vcsim did not answer ${what} within 60 s`)), 60_000);
      pending.push((l) => {
        clearTimeout(timer);
        resolve(l);
      });
    });
  const hello = JSON.parse(await nextLine('its start')) as Omit<Vcsim, 'hookCommand' | 'command' | 'stop'>;
  let chain = Promise.resolve();
  const url = `https://${encodeURIComponent(hello.user)}:${encodeURIComponent(hello.password)}@${hello.server}:${hello.port}/sdk`;
  return {
    ...hello,
    hookCommand: shellCommand([vcsimHook, url]),
    command(verb, name) {
      const run = chain.then(async () => {
        child.stdin!.write(`${verb} ${name}\n`);
        const answer = await nextLine(`${verb} ${name}`);
        if (answer !== 'ok') throw new Error(`vcsim ${verb} ${name}: ${answer}`);
      });
      chain = run.catch(() => undefined);
      return run;
    },
    async stop() {
      child.stdin!.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await child;
      clearTimeout(timer);
    },
  };
}

/** The provider's own cloud config (YAML) for `sim`; secrets, if any, only in `secretNamespace`. */
export function vsphereCloudConfig(sim: Vcsim, secretNamespace: string): string {
  return [
    'global:',
    `  port: ${sim.port}`,
    '  insecureFlag: true',
    `  user: ${JSON.stringify(sim.user)}`,
    `  password: ${JSON.stringify(sim.password)}`,
    `  secretNamespace: ${JSON.stringify(secretNamespace)}`,
    'vcenter:',
    '  vcsim:',
    `    server: ${sim.server}`,
    `    datacenters: [${JSON.stringify(sim.datacenter)}]`,
    '',
  ].join('\n');
}

/** The vSphere provider's own identity in `namespace`: what its Initialize starts, a Node informer and a Secret informer in that namespace. */
export function vsphereProviderIdentity(admin: KubeConfig, namespace: string): Promise<KubeConfig> {
  return providerIdentity(admin, namespace, 'vsphere-cloud-provider', {
    cluster: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] }],
    namespaced: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch'] }],
  });
}
