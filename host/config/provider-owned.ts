/**
 * What real cloud-controller-manager command lines carry that is not
 * k8s.io/cloud-provider's: flags a provider's own binary registers, its own
 * controllers in --controllers, its own pod CIDR allocator; and upstream
 * flags long removed. The host cannot act on any of them, and ignoring them
 * would silently drop what the operator asked for, so each command line that
 * has some fails with ONE line naming each one, its owner, and where it goes
 * instead (docs/upstream-parity.md, "Provider-owned flags and controllers").
 * test/unit/config/real-command-lines.test.ts runs real providers' command
 * lines through this.
 */

/** How to hand words of the command line to the provider plugin, for providers that read their own flags. */
export function passToProvider(words: readonly string[]): string {
  const them = words.length > 1 ? 'them' : 'it';
  return `pass ${them} to the provider instead: ${words.map((w) => `--provider-arg=${w}`).join(' ')} when the host spawns the plugin (--plugin-path), or ${words.join(' ')} in the provider container's args in the sidecar layout (--plugin-endpoint)`;
}

/** A provider's own flags, controllers or CIDR allocators, and what to do with them here. */
export interface ProviderOwned {
  /** Who owns them, as an operator would recognise it. */
  owner: string;
  /** Long flag names without dashes. */
  flags?: readonly string[];
  /** Controller names as given to --controllers (without a leading -). */
  controllers?: readonly string[];
  /** Values of --cidr-allocator-type. */
  cidrAllocators?: readonly string[];
  /** What to do instead; true means passToProvider. */
  how: string | true;
  /**
   * The --cloud-provider names whose plugin in this project declares these
   * flags and controllers (GetPluginInfoResponse.provider_flags and
   * provider_controllers): with one of them the host accepts them and passes
   * them on (ConfigureRequest.provider_args and controllers); the plugin's
   * declaration is checked when it starts.
   */
  declaredBy?: readonly string[];
}

/** Known provider-owned names, from the providers' sources (cmd/ and options/ of each repository). */
export const PROVIDER_OWNED: readonly ProviderOwned[] = [
  {
    owner: "cloud-provider-aws's tagging controller",
    flags: [
      'tags',
      'resources',
      'tagging-controller-rate-limit',
      'tagging-controller-burst-limit',
      'tagging-controller-concurrent-node-syncs',
      'tagging-controller-enable-batching',
    ],
    controllers: ['tagging'],
    how: 'the bridged aws provider (plugins/aws-bridge) declares them and runs the tagging controller in its process: use them with --cloud-provider=aws and that provider',
    declaredBy: ['aws'],
  },
  {
    owner: 'cloud-provider-azure (cloud config from a Secret)',
    flags: ['cloud-config-secret-name', 'cloud-config-secret-namespace', 'cloud-config-key', 'enable-dynamic-reloading'],
    how: 'this host reads the provider configuration from a file: mount the Secret as a volume and pass --cloud-config=<file in it> (with --cloud-config-optional=true if it may be missing); a changed Secret takes effect on the next start',
  },
  {
    owner: 'cloud-provider-ionoscloud',
    flags: ['cluster-id', 'private', 'metrics-endpoint'],
    how: true,
  },
  {
    owner: 'linode-cloud-controller-manager',
    flags: [
      'linodego-debug',
      'enable-route-controller',
      'vpc-name',
      'vpc-names',
      'subnet-names',
      'bgp-node-selector',
      'ip-holder-suffix',
      'load-balancer-type',
      'enable-token-health-checker',
      'nodebalancer-tags',
      'default-nodebalancer-type',
      'enable-ipv6-for-loadbalancers',
      'nodebalancer-backend-ipv4-subnet',
      'nodebalancer-backend-ipv4-subnet-id',
      'nodebalancer-backend-ipv4-subnet-name',
      'disable-nodebalancer-vpc-backends',
    ],
    how: true,
  },
  {
    owner: 'talos-cloud-controller-manager',
    controllers: ['node-csr-approval'],
    how: 'this host approves no CSRs: run talos-cloud-controller-manager beside it with --controllers=node-csr-approval (and a --leader-elect-resource-name of its own), and remove it here',
  },
  {
    owner: "the provider's own node IPAM (cloud-provider-gcp, talos-cloud-controller-manager)",
    cidrAllocators: ['CloudAllocator', 'IPAMFromCluster', 'IPAMFromCloud'],
    how: "this host's node-ipam-controller has RangeAllocator only: let the provider's own controller manager run its node IPAM controller, and remove --allocate-node-cidrs and --cidr-allocator-type here (and nodeipam/node-ipam-controller from --controllers)",
  },
];

/**
 * Flags of the upstream cloud-controller-manager that upstream itself no
 * longer accepts: refused as upstream does, with the replacement.
 */
export const REMOVED_FLAGS: Readonly<Record<string, string>> = {
  address:
    'upstream removed it with the insecure HTTP server (k8s.io/cloud-provider has no --address): remove it; /healthz and /metrics are served over HTTPS on --bind-address and --secure-port',
  port: 'upstream removed it with the insecure HTTP server (k8s.io/cloud-provider has no --port): remove it (--port=0 only turned that server off); /healthz and /metrics are served over HTTPS on --secure-port',
};

/** One provider-owned item found on a command line. */
export interface OwnedItem {
  /** As the operator wrote it, e.g. `--tags` or `--controllers=tagging`. */
  what: string;
  /** For a flag, the whole word with its value (`--cluster-id=k8s`), as the provider would get it. */
  word?: string;
  /** For a controller, its name (`tagging`). */
  controller?: string;
  entry: ProviderOwned;
}

export function ownerOfFlag(name: string): ProviderOwned | undefined {
  return PROVIDER_OWNED.find((e) => e.flags?.includes(name));
}

export function ownerOfController(name: string): ProviderOwned | undefined {
  return PROVIDER_OWNED.find((e) => e.controllers?.includes(name));
}

export function ownerOfCidrAllocator(type: string): ProviderOwned | undefined {
  return PROVIDER_OWNED.find((e) => e.cidrAllocators?.includes(type));
}

/**
 * The one line reporting every provider-owned item of a command line,
 * grouped by owner: `--tags, --controllers=tagging belong to X, not to this
 * host: <how>`, owners separated by `; `.
 */
export function providerOwnedLine(items: readonly OwnedItem[]): string | undefined {
  if (items.length === 0) return undefined;
  const groups = new Map<ProviderOwned, OwnedItem[]>();
  for (const item of items) groups.set(item.entry, [...(groups.get(item.entry) ?? []), item]);
  const parts = [...groups].map(([entry, group]) => {
    const whats = [...new Set(group.map((i) => i.what))];
    const how = entry.how === true ? passToProvider(group.map((i) => i.word ?? i.what)) : entry.how;
    return `${whats.join(', ')} ${whats.length > 1 ? 'belong' : 'belongs'} to ${entry.owner}, not to this host: ${how}`;
  });
  return parts.join('; ');
}
