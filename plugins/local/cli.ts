#!/usr/bin/env node
/**
 * `localcloud`: the operator's side of the local cloud. Adds and removes
 * simulated instances, shows load balancers, routes and volumes, and flips
 * fault-injection knobs, all in the state directory the provider serves from.
 *
 *   localcloud [--state DIR] instance add NAME... [--type T] [--zone Z] [--region R]
 *                                     [--address [TYPE=]VALUE]... [--no-addresses] [--no-hostname] [--label k=v]... [-o json]
 *   localcloud instance delete|shutdown|start NAME|ID
 *   localcloud instance list [-o json]
 *   localcloud lb list [--cluster C] [-o json]
 *   localcloud route list [--cluster C] [-o json]
 *   localcloud route add CIDR --node N [--cluster C] | route delete NAME|CIDR [--cluster C]
 *   localcloud volume list [-o json]
 *   localcloud knobs set KEY=VALUE... | unset KEY... | reset | show [-o json]
 *
 * Errors print one line on stderr and exit with status 1.
 */
import { Command, Option } from 'commander';
import { addInstances, deleteInstance, inventoryDefaults, parseAddress, parseLabel, setInstanceState, type NewInstanceSpec } from './inventory.js';
import { KNOB_ENV, KNOB_NAMES, knobName, knobsFromEnv, mergeKnobs, parseKnobValue, updateKnobs } from './knobs.js';
import { providerIdOf } from './names.js';
import { addRoute, deleteRoutes } from './route-admin.js';
import { resolveStateDir, StateStore, type InstanceRecord, type KnobSettings } from './state.js';
import { formatTable } from './table.js';

type Output = 'table' | 'json';

const program = new Command('localcloud')
  .description('Operate the local cloud: simulated instances, load balancers, routes, volumes and fault knobs.')
  .option('--state <dir>', 'state directory (default: $LOCALCLOUD_STATE_DIR, else ./.localcloud)')
  .showSuggestionAfterError()
  .helpCommand(true);

function store(): StateStore {
  return new StateStore(resolveStateDir(program.opts<{ state?: string }>().state));
}

function outputOption(): Option {
  return new Option('-o, --output <format>', 'output format').choices(['table', 'json']).default('table');
}

function print(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : text + '\n');
}

function printJson(value: unknown): void {
  print(JSON.stringify(value, null, 2));
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function withProviderId(i: InstanceRecord): InstanceRecord & { providerId: string } {
  return { ...i, providerId: providerIdOf(i.id) };
}

// ---- instance ----

const instance = program.command('instance').description('manage simulated instances (Kubernetes nodes are named after them)');

instance
  .command('add')
  .description('add instances; prints "<id> <providerID>" for each')
  .argument('<names...>', 'node names of the new instances')
  .option('--type <type>', 'instance type (default local.small)')
  .option('--zone <zone>', 'zone (default $LOCALCLOUD_ZONE or local-a)')
  .option('--region <region>', 'region (default $LOCALCLOUD_REGION or local)')
  .option(
    '--address <[type=]value>',
    'address, repeatable: an IP (InternalIP) or TYPE=VALUE, TYPE one of InternalIP, ExternalIP, Hostname, InternalDNS, ExternalDNS',
    collect,
    [],
  )
  .option('--no-addresses', 'report no addresses at all (as a cloud may for an instance still being set up)')
  .option('--no-hostname', 'report no Hostname address (none is added; as a cloud that reports IPs only)')
  .option('--label <key=value>', 'extra node label, repeatable', collect, [])
  .addOption(outputOption())
  .action(
    async (
      names: string[],
      o: { type?: string; zone?: string; region?: string; address: string[]; addresses: boolean; hostname: boolean; label: string[]; output: Output },
    ) => {
      const addresses = o.address.map(parseAddress);
      const labels = Object.fromEntries(o.label.map(parseLabel));
      const noAddresses = !o.addresses;
      const noHostname = !o.hostname;
      const specs: NewInstanceSpec[] = names.map((name) => ({
        name,
        type: o.type,
        zone: o.zone,
        region: o.region,
        addresses,
        noAddresses,
        noHostname,
        labels,
      }));
      if (names.length > 1 && addresses.some((a) => a.type === 'InternalIP' || a.type === 'ExternalIP')) {
        throw new Error('--address with an IP applies to a single instance; add instances one by one');
      }
      const added = await addInstances(store(), specs, inventoryDefaults());
      if (o.output === 'json') printJson(added.map(withProviderId));
      else print(added.map((i) => `${i.id} ${providerIdOf(i.id)}`).join('\n'));
    },
  );

instance
  .command('delete')
  .description('delete an instance (its volumes are detached)')
  .argument('<ref>', 'instance name, id or providerID')
  .action(async (ref: string) => {
    const i = await deleteInstance(store(), ref);
    print(`${i.id} deleted`);
  });

instance
  .command('shutdown')
  .description('stop an instance (it still exists)')
  .argument('<ref>', 'instance name, id or providerID')
  .action(async (ref: string) => {
    const i = await setInstanceState(store(), ref, 'stopped');
    print(`${i.id} stopped`);
  });

instance
  .command('start')
  .description('start a stopped instance')
  .argument('<ref>', 'instance name, id or providerID')
  .action(async (ref: string) => {
    const i = await setInstanceState(store(), ref, 'running');
    print(`${i.id} running`);
  });

instance
  .command('list')
  .description('list instances')
  .addOption(outputOption())
  .action((o: { output: Output }) => {
    const list = store().read().instances;
    if (o.output === 'json') return printJson(list.map(withProviderId));
    print(
      formatTable(
        ['ID', 'NAME', 'STATE', 'TYPE', 'ZONE', 'REGION', 'ADDRESSES'],
        list.map((i) => [i.id, i.name, i.state, i.type, i.zone, i.region, i.addresses.map((a) => `${a.type}=${a.address}`).join(',')]),
      ),
    );
  });

// ---- lb ----

program
  .command('lb')
  .description('load balancers')
  .command('list')
  .description('list load balancers')
  .option('--cluster <name>', 'only this cluster')
  .addOption(outputOption())
  .action((o: { cluster?: string; output: Output }) => {
    const list = store()
      .read()
      .loadBalancers.filter((lb) => !o.cluster || lb.clusterName === o.cluster);
    if (o.output === 'json') return printJson(list);
    print(
      formatTable(
        ['NAME', 'CLUSTER', 'SERVICE', 'INGRESS', 'MODE', 'PORTS', 'BACKENDS'],
        list.map((lb) => [
          lb.name,
          lb.clusterName,
          `${lb.serviceNamespace}/${lb.serviceName}`,
          lb.ingressIp,
          lb.ipMode,
          lb.ports.map((p) => `${p.port}/${p.protocol}->${p.nodePort}`).join(','),
          lb.backends.map((b) => (b.address ? `${b.nodeName}=${b.address}` : b.nodeName)).join(','),
        ]),
      ),
    );
  });

// ---- route ----

const route = program.command('route').description('routes');

route
  .command('add')
  .description('add a route by hand (as someone using the cloud console would)')
  .argument('<cidr>', 'destination CIDR')
  .requiredOption('--node <name>', 'target node name')
  .option('--cluster <name>', 'cluster name', 'kubernetes')
  .action(async (cidr: string, o: { node: string; cluster: string }) => {
    const r = await addRoute(store(), o.cluster, o.node, cidr);
    print(r.name);
  });

route
  .command('delete')
  .description('delete routes by name or destination CIDR')
  .argument('<name-or-cidr>')
  .option('--cluster <name>', 'cluster name', 'kubernetes')
  .action(async (ref: string, o: { cluster: string }) => {
    const n = await deleteRoutes(store(), o.cluster, ref);
    if (n === 0) throw new Error(`no route ${JSON.stringify(ref)} in cluster ${o.cluster}`);
  });

route
  .command('list')
  .description('list routes (BLACKHOLE: no instance has the target node name)')
  .option('--cluster <name>', 'only this cluster')
  .addOption(outputOption())
  .action((o: { cluster?: string; output: Output }) => {
    const view = store().view();
    const list = view.state.routes
      .filter((r) => !o.cluster || r.clusterName === o.cluster)
      .map((r) => ({ ...r, blackhole: view.instanceByName(r.targetNode) === undefined }));
    if (o.output === 'json') return printJson(list);
    print(
      formatTable(
        ['NAME', 'CLUSTER', 'TARGET', 'DESTINATION', 'BLACKHOLE'],
        list.map((r) => [r.name, r.clusterName, r.targetNode, r.destinationCidr, String(r.blackhole)]),
      ),
    );
  });

// ---- volume ----

program
  .command('volume')
  .description('volumes')
  .command('list')
  .description('list volumes')
  .addOption(outputOption())
  .action((o: { output: Output }) => {
    const s = store();
    const list = s.read().volumes.map((v) => ({ ...v, path: s.volumePath(v.id) }));
    if (o.output === 'json') return printJson(list);
    print(
      formatTable(
        ['ID', 'NAME', 'BYTES', 'ZONE', 'ATTACHED'],
        list.map((v) => [
          v.id,
          v.name,
          String(v.capacityBytes),
          v.zone,
          v.attachments.map((a) => a.instanceId + (a.readonly ? '(ro)' : '')).join(','),
        ]),
      ),
    );
  });

// ---- knobs ----

const knobs = program
  .command('knobs')
  .description(`fault-injection knobs, stored in the state and seen by the running provider on its next call (${KNOB_NAMES.join(', ')})`);

function parseKnobName(text: string) {
  const name = knobName(text);
  if (!name) throw new Error(`unknown knob ${JSON.stringify(text)}; knobs are ${KNOB_NAMES.join(', ')}`);
  return name;
}

knobs
  .command('set')
  .description('set knobs, e.g. "knobs set latencyMs=50 errorRate=0.1 failAll=true"')
  .argument('<pairs...>', 'KEY=VALUE pairs')
  .action(async (pairs: string[]) => {
    const changes: KnobSettings = {};
    for (const pair of pairs) {
      const eq = pair.indexOf('=');
      if (eq < 0) throw new Error(`${JSON.stringify(pair)} must be KEY=VALUE`);
      const name = parseKnobName(pair.slice(0, eq));
      (changes as Record<string, number | boolean | string>)[name] = parseKnobValue(name, pair.slice(eq + 1));
    }
    await updateKnobs(store(), changes);
  });

knobs
  .command('unset')
  .description('remove runtime overrides (the provider falls back to its environment)')
  .argument('<names...>', 'knob names')
  .action(async (names: string[]) => {
    await updateKnobs(store(), {}, names.map(parseKnobName));
  });

knobs
  .command('reset')
  .description('remove every runtime override')
  .action(async () => {
    await updateKnobs(store(), {}, KNOB_NAMES);
  });

knobs
  .command('show')
  .description("show runtime overrides and the values they give with this shell's environment")
  .addOption(outputOption())
  .action((o: { output: Output }) => {
    const fromState = store().read().knobs;
    const fromEnv = knobsFromEnv(process.env);
    const effective = mergeKnobs(fromEnv, fromState);
    if (o.output === 'json') return printJson({ effective, state: fromState, env: fromEnv });
    print(
      formatTable(
        ['KNOB', 'VALUE', 'SOURCE', 'ENV'],
        KNOB_NAMES.map((k) => [k, String(effective[k]), k in fromState ? 'state' : k in fromEnv ? 'env' : 'default', KNOB_ENV[k]]),
      ),
    );
  });

program.parseAsync(process.argv).catch((err: unknown) => {
  const msg = err instanceof Error ? err.message : String(err);
  process.stderr.write(`localcloud: ${msg.split('\n')[0]}\n`);
  process.exitCode = 1;
});
