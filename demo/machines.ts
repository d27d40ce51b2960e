/**
 * The demo's machines: every running instance of the local cloud is a
 * machine with a hollow kubelet (its Node) and a small HTTP server on its
 * InternalIP at the demo Service's nodePort (what kube-proxy would serve).
 * Stopping or deleting the instance with the `localcloud` CLI kills both, as
 * a machine going down would; starting it again (or adding an instance)
 * brings them up. So the CLI alone shows a node dying and being handled.
 */
import { createServer, type Server } from 'node:http';
import type { InstanceRecord, StateStore } from '../plugins/local/state.js';
import type { HollowNodes } from '../test/helpers/hollow-nodes.js';

/** Machines the demo runs at most: each kubelet costs about 80 MiB. */
export const MAX_MACHINES = 20;

export class DemoMachines {
  /** Names whose kubelet runs, with their HTTP server once the nodePort is known. */
  private readonly up = new Map<string, { ip: string; server?: Server }>();
  /** Instances whose kubelet failed to start, keyed by name, valued by the instance's createdAt: not retried until the instance is replaced. */
  private readonly failed = new Map<string, string>();
  private nodePort?: number;
  private warnedCap = false;

  constructor(
    private readonly store: StateStore,
    private readonly kubelets: HollowNodes,
    private readonly say: (line: string) => void,
    /** Labels the machines' kubelets register with (a cloud's node selector claims them). */
    private readonly labels: Record<string, string> = {},
  ) {}

  /** Starts HTTP servers on every machine at `port`, and on every machine that comes up later. */
  async serve(port: number): Promise<void> {
    this.nodePort = port;
    for (const [name, m] of this.up) m.server ??= await this.listen(name, m.ip);
  }

  /** Brings the machines in line with the cloud's running instances; one call at a time. */
  async sync(): Promise<void> {
    const running = new Map<string, InstanceRecord>();
    for (const i of this.store.read().instances) if (i.state === 'running') running.set(i.name, i);
    for (const [name, m] of this.up) {
      if (running.has(name)) continue;
      await this.kubelets.kill(name);
      closeServer(m.server);
      this.up.delete(name);
      this.say(
        `instance ${name} is ${this.store.read().instances.some((i) => i.name === name) ? 'stopped' : 'deleted'}: its kubelet and server died with it (SIGKILL)`,
      );
    }
    const starting = [...running.values()].filter((i) => !this.up.has(i.name) && this.failed.get(i.name) !== i.createdAt);
    const room = MAX_MACHINES - this.up.size;
    if (starting.length > room && !this.warnedCap) {
      this.warnedCap = true;
      this.say(`the demo runs at most ${MAX_MACHINES} machines; instances beyond that get no kubelet`);
    }
    await Promise.all(starting.slice(0, Math.max(0, room)).map((i) => this.start(i)));
  }

  private async start(i: InstanceRecord): Promise<void> {
    const ip = i.addresses.find((a) => a.type === 'InternalIP')?.address;
    this.say(`instance ${i.name} runs: starting its hollow kubelet`);
    try {
      await this.kubelets.add({ name: i.name, labels: this.labels });
    } catch (err) {
      this.failed.set(i.name, i.createdAt);
      this.say(
        `the kubelet of ${i.name} did not register (${err instanceof Error ? err.message.split('\n')[0] : String(err)}); log: ${this.kubelets.logPath(i.name)}`,
      );
      return;
    }
    this.failed.delete(i.name);
    this.up.set(i.name, { ip: ip ?? '' });
    if (ip && this.nodePort !== undefined) this.up.get(i.name)!.server = await this.listen(i.name, ip);
  }

  private async listen(name: string, ip: string): Promise<Server | undefined> {
    if (!ip || this.nodePort === undefined) return undefined;
    const port = this.nodePort;
    const server = createServer((_req, res) => res.end(`hello from ${name} (${ip}:${port})\n`));
    return new Promise((resolve) => {
      server.once('error', (err) => {
        this.say(`no HTTP server for ${name} on ${ip}:${port}: ${err.message}`);
        resolve(undefined);
      });
      server.listen(port, ip, () => resolve(server));
    });
  }

  /** Kills every kubelet and closes every server. */
  async stop(): Promise<void> {
    for (const m of this.up.values()) closeServer(m.server);
    this.up.clear();
    await this.kubelets.stop();
  }
}

/** Closes the server and its open connections, as a machine going down drops them. */
function closeServer(server: Server | undefined): void {
  server?.closeAllConnections();
  server?.close();
}
