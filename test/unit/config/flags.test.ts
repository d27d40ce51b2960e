/**
 * parseHostArgs, table-driven: each case gives argv and either a subset of
 * the expected HostConfig or substrings the reported errors must contain.
 * Files the flags point at live in a temporary directory made at load time.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import type { HostConfig, ServingConfig } from '../../../host/config/config.js';
import { parseHostArgs } from '../../../host/config/flags.js';
import { Controllers } from '../../../host/names.js';

const DIR = fs.mkdtempSync(path.join(os.tmpdir(), 'ccm-flags-'));
const file = (rel: string, content = '', mode = 0o644) => {
  const p = path.join(DIR, rel);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, content, { mode });
  fs.chmodSync(p, mode);
  return p;
};
const CLOUD_CONF = file('cloud.conf', 'region: x\n');
const KUBECONFIG = file('kubeconfig', 'apiVersion: v1\n');
const CERT = file('tls.crt', 'cert');
const KEY = file('tls.key', 'key');
const EXE_DIR = path.dirname(file('exe/ccm-provider-foo', '#!/bin/sh\n', 0o755));
const EXE = path.join(EXE_DIR, 'ccm-provider-foo');
const JS_DIR = path.dirname(file('js/ccm-provider-foo.js', ''));
const NOEXEC = file('noexec/ccm-provider-foo', '#!/bin/sh\n', 0o644);
const EMPTY_DIR = path.join(DIR, 'empty');
fs.mkdirSync(EMPTY_DIR);
const LOCAL_PLUGIN = file('dist/plugins/local/main.js', '');
const MISSING = path.join(DIR, 'missing');

test.after.always(() => fs.rmSync(DIR, { recursive: true, force: true }));

/** Flags every case needs unless it is about them. */
const BASE = ['--cloud-provider=foo', '--plugin-endpoint=unix:///run/ccm/foo.sock'];
const ALL = Object.values(Controllers);
const VOLUME_CONTROLLERS = [Controllers.VOLUME_PROVISIONER, Controllers.VOLUME_ATTACHER, Controllers.VOLUME_RESIZER, Controllers.PV_LABEL];

/** Upstream's secure-serving defaults. */
const DEFAULT_SERVING: ServingConfig = {
  tls: undefined,
  certDir: '',
  tlsMinVersion: undefined,
  tlsCiphers: undefined,
  tlsCurves: undefined,
  authentication: {
    kubeconfig: undefined,
    skipLookup: false,
    tolerateLookupFailure: false,
    tokenCacheTtlMs: 10_000,
    clientCaFile: undefined,
    requestHeader: {
      clientCaFile: undefined,
      allowedNames: [],
      usernameHeaders: ['x-remote-user'],
      uidHeaders: [],
      groupHeaders: ['x-remote-group'],
      extraHeaderPrefixes: ['x-remote-extra-'],
    },
  },
  authorization: { kubeconfig: undefined, alwaysAllowPaths: ['/healthz', '/readyz', '/livez'], allowCacheTtlMs: 10_000, denyCacheTtlMs: 10_000 },
};
const serving = (o: Partial<ServingConfig>): Partial<HostConfig> => ({ serving: { ...DEFAULT_SERVING, ...o } });
const authn = (o: Partial<ServingConfig['authentication']>) => serving({ authentication: { ...DEFAULT_SERVING.authentication, ...o } });
const requestHeader = (o: Partial<ServingConfig['authentication']['requestHeader']>) =>
  authn({ requestHeader: { ...DEFAULT_SERVING.authentication.requestHeader, ...o } });
const authz = (o: Partial<ServingConfig['authorization']>) => serving({ authorization: { ...DEFAULT_SERVING.authorization, ...o } });

interface Case {
  description: string;
  argv: string[];
  env?: Record<string, string>;
  /** Built-in local plugin file; default LOCAL_PLUGIN. */
  localPluginPath?: string;
  /** Fields the config must have (deep-equal, field by field). */
  want?: Partial<HostConfig>;
  /** Substrings that must each appear in some error. */
  errors?: string[];
  /** Exact number of errors, when the case is about reporting all of them. */
  errorCount?: number;
}

const cases: Case[] = [
  // Defaults.
  {
    description: 'defaults',
    argv: BASE,
    want: {
      cloudProvider: 'foo',
      cloudConfigPath: undefined,
      cloudConfigOptional: false,
      pluginStartTimeoutMs: 60_000,
      pluginShutdownGraceMs: 10_000,
      pluginCallTimeoutMs: 10_000,
      pluginMutationTimeoutMs: 60_000,
      pluginAllowTcp: false,
      pluginAllowExternalSocket: false,
      pluginEnv: {},
      kubeconfig: undefined,
      master: undefined,
      clusterName: 'kubernetes',
      clusterNameDefaulted: true,
      controllers: ['*'],
      enabledControllers: ALL,
      concurrentNodeSyncs: 1,
      concurrentNodeStatusUpdates: 1,
      nodeStatusUpdateFrequencyMs: 300_000,
      nodeMonitorPeriodMs: 5_000,
      kubeApiQps: 20,
      kubeApiBurst: 30,
      bindAddress: '0.0.0.0',
      securePort: 10258,
      serving: DEFAULT_SERVING,
      leaderElect: true,
      leaderElection: {
        leaseDurationMs: 15_000,
        renewDeadlineMs: 10_000,
        retryPeriodMs: 2_000,
        resourceLock: 'leases',
        resourceName: 'cloud-controller-manager',
        resourceNamespace: 'kube-system',
        pluginUnreadyReleaseMs: 60_000,
      },
      useServiceAccountCredentials: false,
      verbosity: 0,
      loggingFormat: 'text',
      minResyncPeriodMs: 12 * 3_600_000,
      configureCloudRoutes: true,
      clusterCidrs: [],
      allocateNodeCidrs: false,
      cidrAllocatorType: 'RangeAllocator',
      nodeCidrMaskSizes: [],
      routeReconciliationPeriodMs: 10_000,
      concurrentServiceSyncs: 10,
      nodeDeletionGracePeriodMs: 0,
      nodeDeletionLimit: { percent: 10 },
      nodeDeletionLimitWindowMs: 300_000,
      nodeSelector: '',
      watchNamespace: '',
      warnings: [],
    },
  },

  // --cloud-provider
  {
    description: 'cloud-provider as a separate word',
    argv: ['--cloud-provider', 'foo', '--plugin-endpoint', 'unix:///s.sock'],
    want: { cloudProvider: 'foo' },
  },
  { description: 'cloud-provider missing', argv: ['--plugin-endpoint=unix:///s.sock'], errors: ['--cloud-provider is required'], errorCount: 1 },
  { description: 'cloud-provider empty', argv: ['--cloud-provider=', '--plugin-endpoint=unix:///s.sock'], errors: ['--cloud-provider is required'] },
  {
    description: 'cloud-provider not a DNS label',
    argv: ['--cloud-provider=Foo_Bar', '--plugin-endpoint=unix:///s.sock'],
    errors: ['--cloud-provider="Foo_Bar" is invalid', 'DNS label'],
  },

  // --cloud-config
  { description: 'cloud-config readable', argv: [...BASE, `--cloud-config=${CLOUD_CONF}`], want: { cloudConfigPath: CLOUD_CONF } },
  {
    description: 'cloud-config missing',
    argv: [...BASE, `--cloud-config=${MISSING}`],
    errors: [`cannot read --cloud-config ${MISSING}: no such file or directory`],
  },
  {
    description: 'cloud-config is a directory',
    argv: [...BASE, `--cloud-config=${DIR}`],
    errors: [`cannot read --cloud-config ${DIR}: not a regular file`],
  },
  {
    description: 'cloud-config-optional with the file present',
    argv: [...BASE, `--cloud-config=${CLOUD_CONF}`, '--cloud-config-optional'],
    want: { cloudConfigPath: CLOUD_CONF, cloudConfigOptional: true },
  },
  {
    description: 'cloud-config-optional with the file absent',
    argv: [...BASE, `--cloud-config=${MISSING}`, '--cloud-config-optional=true'],
    want: { cloudConfigPath: MISSING, cloudConfigOptional: true },
  },
  {
    description: 'cloud-config-optional with a missing parent directory',
    argv: [...BASE, `--cloud-config=${MISSING}/cloud.conf`, '--cloud-config-optional'],
    want: { cloudConfigPath: `${MISSING}/cloud.conf` },
  },
  {
    description: 'cloud-config-optional does not excuse a directory',
    argv: [...BASE, `--cloud-config=${DIR}`, '--cloud-config-optional'],
    errors: [`cannot read --cloud-config ${DIR}: not a regular file`],
  },
  {
    description: 'cloud-config-optional without cloud-config',
    argv: [...BASE, '--cloud-config-optional'],
    errors: ['--cloud-config-optional=true needs --cloud-config'],
  },
  {
    description: 'cloud-config-optional=false keeps a missing file an error',
    argv: [...BASE, `--cloud-config=${MISSING}`, '--cloud-config-optional=false'],
    errors: [`cannot read --cloud-config ${MISSING}: no such file or directory`],
  },

  // --plugin-path / --plugin-endpoint / built-in local plugin
  {
    description: 'plugin-path directory with an executable',
    argv: ['--cloud-provider=foo', `--plugin-path=${EXE_DIR}`],
    want: { plugin: { kind: 'exec', origin: 'plugin-path', file: EXE, command: EXE, args: [] } },
  },
  {
    description: 'plugin-path directory with a .js entry point runs it with node',
    argv: ['--cloud-provider=foo', '--plugin-path', JS_DIR],
    want: {
      plugin: {
        kind: 'exec',
        origin: 'plugin-path',
        file: path.join(JS_DIR, 'ccm-provider-foo.js'),
        command: process.execPath,
        args: [path.join(JS_DIR, 'ccm-provider-foo.js')],
      },
    },
  },
  {
    description: 'plugin-path is the executable itself',
    argv: ['--cloud-provider=foo', `--plugin-path=${EXE}`],
    want: { plugin: { kind: 'exec', origin: 'plugin-path', file: EXE, command: EXE, args: [] } },
  },
  {
    description: 'plugin-path missing',
    argv: ['--cloud-provider=foo', `--plugin-path=${MISSING}`],
    errors: [`--plugin-path ${MISSING}: no such file or directory`],
  },
  {
    description: 'plugin-path directory without the plugin',
    argv: ['--cloud-provider=foo', `--plugin-path=${EMPTY_DIR}`],
    errors: ['holds neither ccm-provider-foo nor ccm-provider-foo.js'],
  },
  { description: 'plugin-path not executable', argv: ['--cloud-provider=foo', `--plugin-path=${NOEXEC}`], errors: ['is not executable', 'chmod +x'] },
  {
    description: 'plugin-endpoint',
    argv: ['--cloud-provider=foo', '--plugin-endpoint=unix:///run/ccm/provider.sock'],
    want: { plugin: { kind: 'endpoint', endpoint: 'unix:///run/ccm/provider.sock', socketPath: '/run/ccm/provider.sock' } },
  },
  {
    description: 'plugin-endpoint with a relative path',
    argv: ['--cloud-provider=foo', '--plugin-endpoint=unix://run/p.sock'],
    errors: ['--plugin-endpoint="unix://run/p.sock" is invalid', 'unix:///run/ccm/provider.sock'],
  },
  {
    description: 'plugin-endpoint over tcp',
    argv: ['--cloud-provider=foo', '--plugin-endpoint=tcp://127.0.0.1:1'],
    errors: ['--plugin-endpoint="tcp://127.0.0.1:1" is invalid'],
  },
  {
    description: 'plugin-path and plugin-endpoint are mutually exclusive',
    argv: ['--cloud-provider=foo', `--plugin-path=${EXE_DIR}`, '--plugin-endpoint=unix:///s.sock'],
    errors: ['--plugin-path and --plugin-endpoint are mutually exclusive'],
    errorCount: 1,
  },
  {
    description: 'neither plugin flag for a non-local provider',
    argv: ['--cloud-provider=foo'],
    errors: ['one of --plugin-path or --plugin-endpoint is required', 'ccm-provider-foo'],
    errorCount: 1,
  },
  {
    description: 'local provider without plugin flags uses the built-in plugin',
    argv: ['--cloud-provider=local'],
    want: {
      cloudProvider: 'local',
      plugin: { kind: 'exec', origin: 'builtin-local', file: LOCAL_PLUGIN, command: process.execPath, args: [LOCAL_PLUGIN] },
    },
  },
  {
    description: 'local provider when the built-in plugin is not built',
    argv: ['--cloud-provider=local'],
    localPluginPath: MISSING,
    errors: ['built-in plugin', 'npm run build'],
  },
  {
    description: 'local provider with an endpoint',
    argv: ['--cloud-provider=local', '--plugin-endpoint=unix:///l.sock'],
    want: { plugin: { kind: 'endpoint', endpoint: 'unix:///l.sock', socketPath: '/l.sock' } },
  },

  // Durations
  { description: 'plugin-start-timeout in minutes', argv: [...BASE, '--plugin-start-timeout=5m'], want: { pluginStartTimeoutMs: 300_000 } },
  { description: 'plugin-shutdown-grace compound', argv: [...BASE, '--plugin-shutdown-grace', '1m30s'], want: { pluginShutdownGraceMs: 90_000 } },
  { description: 'plugin-shutdown-grace 0 (kill at once)', argv: [...BASE, '--plugin-shutdown-grace=0'], want: { pluginShutdownGraceMs: 0 } },
  { description: 'plugin-call-timeout in ms', argv: [...BASE, '--plugin-call-timeout=500ms'], want: { pluginCallTimeoutMs: 500 } },
  {
    description: 'plugin-allow-tcp and plugin-allow-external-socket as Go bools',
    argv: [...BASE, '--plugin-allow-tcp', '--plugin-allow-external-socket=true'],
    want: { pluginAllowTcp: true, pluginAllowExternalSocket: true },
  },
  { description: 'plugin-allow-tcp with a bad bool', argv: [...BASE, '--plugin-allow-tcp=maybe'], errors: ['--plugin-allow-tcp'] },
  {
    description: 'plugin-mutation-timeout in hours and minutes',
    argv: [...BASE, '--plugin-mutation-timeout=1h30m'],
    want: { pluginMutationTimeoutMs: 5_400_000 },
  },
  { description: 'fractional duration', argv: [...BASE, '--plugin-call-timeout=1.5s'], want: { pluginCallTimeoutMs: 1_500 } },
  {
    description: 'duration without a unit',
    argv: [...BASE, '--plugin-call-timeout=10'],
    errors: ['--plugin-call-timeout="10" is invalid', 'e.g. 500ms, 10s, 5m or 1h30m'],
  },
  {
    description: 'zero timeout',
    argv: [...BASE, '--plugin-start-timeout=0s'],
    errors: ['--plugin-start-timeout="0s" is invalid: want a duration greater than 0'],
  },
  {
    description: 'negative grace',
    argv: [...BASE, '--plugin-shutdown-grace=-1s'],
    errors: ['--plugin-shutdown-grace="-1s" is invalid: want a duration of 0 or more'],
  },
  {
    description: 'node-status-update-frequency',
    argv: [...BASE, '--node-status-update-frequency=1m'],
    want: { nodeStatusUpdateFrequencyMs: 60_000 },
  },
  { description: 'node-monitor-period', argv: [...BASE, '--node-monitor-period=10s'], want: { nodeMonitorPeriodMs: 10_000 } },
  { description: 'min-resync-period', argv: [...BASE, '--min-resync-period=1h'], want: { minResyncPeriodMs: 3_600_000 } },
  { description: 'route-reconciliation-period', argv: [...BASE, '--route-reconciliation-period=30s'], want: { routeReconciliationPeriodMs: 30_000 } },
  { description: 'node-deletion-grace-period', argv: [...BASE, '--node-deletion-grace-period=2m'], want: { nodeDeletionGracePeriodMs: 120_000 } },
  {
    description: 'node-deletion-limit count and window',
    argv: [...BASE, '--node-deletion-limit=3', '--node-deletion-limit-window=1m'],
    want: { nodeDeletionLimit: { count: 3 }, nodeDeletionLimitWindowMs: 60_000 },
  },
  { description: 'node-deletion-limit percentage', argv: [...BASE, '--node-deletion-limit=25%'], want: { nodeDeletionLimit: { percent: 25 } } },
  { description: 'node-deletion-limit 0 turns the brake off', argv: [...BASE, '--node-deletion-limit=0'], want: { nodeDeletionLimit: null } },
  {
    description: 'node-deletion-limit 0% is refused (neither "off" nor the floor of 5)',
    argv: [...BASE, '--node-deletion-limit=0%'],
    errors: [
      '--node-deletion-limit="0%" is invalid: use a count of nodes (e.g. 5; 0 turns the limit off) or a percentage of the nodes from 1% to 100%',
    ],
  },
  {
    description: 'node-deletion-limit garbage',
    argv: [...BASE, '--node-deletion-limit=lots'],
    errors: ['--node-deletion-limit="lots" is invalid: use a count of nodes'],
  },
  {
    description: 'node-deletion-limit-window zero',
    argv: [...BASE, '--node-deletion-limit-window=0s'],
    errors: ['--node-deletion-limit-window="0s" is invalid: want a duration greater than 0'],
  },
  { description: 'cluster-uid default: read at start', argv: [...BASE], want: { clusterUid: '' } },
  { description: 'cluster-uid override', argv: [...BASE, '--cluster-uid=2f1c-old-kube-system'], want: { clusterUid: '2f1c-old-kube-system' } },
  { description: 'cluster-uid with a space', argv: [...BASE, '--cluster-uid=a b'], errors: ['--cluster-uid="a b" is invalid: want a uid'] },
  {
    description: 'lb-orphan-sweep-limit default',
    argv: [...BASE],
    want: { lbOrphanSweep: { periodMs: 600_000, graceMs: 300_000, dryRun: false, limit: 10 } },
  },
  { description: 'lb-orphan-sweep-limit 0', argv: [...BASE, '--lb-orphan-sweep-limit=0'], errors: ['--lb-orphan-sweep-limit'] },

  // Scoping (not in upstream)
  { description: 'node-selector equality', argv: [...BASE, '--node-selector=pool=a'], want: { nodeSelector: 'pool=a' } },
  {
    description: 'node-selector set terms',
    argv: [...BASE, '--node-selector=pool in (a,b),!spot,zone!=z1'],
    want: { nodeSelector: 'pool in (a,b),!spot,zone!=z1' },
  },
  { description: 'node-selector garbage', argv: [...BASE, '--node-selector=a=b=c'], errors: ['--node-selector="a=b=c" is invalid'] },
  { description: 'watch-namespace', argv: [...BASE, '--watch-namespace=team-a'], want: { watchNamespace: 'team-a' } },

  // Node ownership override (not in upstream; KEP-5778)
  { description: 'node ownership: the provider declares (no flags)', argv: [...BASE], want: { nodeOwnership: {} } },
  {
    description: 'node ownership: prefixes and selector replace the declarations',
    argv: [...BASE, '--node-ownership-prefixes=aws://, hrobot://', '--node-ownership-selector=topology.kubernetes.io/platform in (aws,eks)'],
    want: { nodeOwnership: { prefixes: ['aws://', 'hrobot://'], selector: 'topology.kubernetes.io/platform in (aws,eks)' } },
  },
  {
    description: 'node ownership: an empty selector means every Node without a providerID (one provider)',
    argv: [...BASE, '--node-ownership-selector='],
    want: { nodeOwnership: { selector: '' } },
  },
  {
    description: 'node ownership: every bad value at once',
    argv: [...BASE, '--node-ownership-prefixes=aws,GCE://', '--node-ownership-selector=a in b'],
    errors: [
      '--node-ownership-prefixes="aws,GCE://" is invalid: providerID prefix "aws" is not',
      '--node-ownership-prefixes="aws,GCE://" is invalid: providerID prefix "GCE://" is not',
      '--node-ownership-selector="a in b" is invalid',
    ],
  },
  { description: 'node ownership: no prefix at all', argv: [...BASE, '--node-ownership-prefixes=,'], errors: ['--node-ownership-prefixes is empty'] },
  { description: 'watch-namespace invalid', argv: [...BASE, '--watch-namespace=Team_A'], errors: ['--watch-namespace="Team_A" is invalid'] },

  // --plugin-env
  {
    description: 'plugin-env entries: literal values keep commas, names read the host env',
    argv: [...BASE, '--plugin-env=NO_PROXY=a,b', '--plugin-env', 'REGION', '--plugin-env=EMPTY='],
    env: { REGION: 'eu-1', SECRET: 'x' },
    want: { pluginEnv: { NO_PROXY: 'a,b', REGION: 'eu-1', EMPTY: '' }, warnings: [] },
  },
  {
    description: 'plugin-env name unset in the host env is a warning',
    argv: [...BASE, '--plugin-env=ABSENT'],
    env: {},
    want: { pluginEnv: {}, warnings: ["--plugin-env=ABSENT: ABSENT is not set in the host's environment, so the plugin will not get it"] },
  },
  { description: 'plugin-env invalid name', argv: [...BASE, '--plugin-env=1BAD=x'], errors: ['--plugin-env="1BAD=x" is invalid', 'NAME=VALUE'] },
  {
    description: 'plugin-env reserved protocol variable',
    argv: [...BASE, '--plugin-env=CCM_PLUGIN_ENDPOINT=x'],
    errors: ['CCM_PLUGIN_ are set by the host'],
  },

  // --kubeconfig, --master, --cluster-name
  {
    description: 'kubeconfig and master',
    argv: [...BASE, '--kubeconfig', KUBECONFIG, '--master=https://10.0.0.1:6443'],
    want: { kubeconfig: KUBECONFIG, master: 'https://10.0.0.1:6443' },
  },
  { description: 'kubeconfig missing', argv: [...BASE, `--kubeconfig=${MISSING}`], errors: [`cannot read --kubeconfig ${MISSING}`] },
  { description: 'cluster-name given', argv: [...BASE, '--cluster-name=prod-eu'], want: { clusterName: 'prod-eu', clusterNameDefaulted: false } },
  {
    description: 'cluster-name given as the default value is not "defaulted"',
    argv: [...BASE, '--cluster-name=kubernetes'],
    want: { clusterName: 'kubernetes', clusterNameDefaulted: false },
  },
  { description: 'cluster-name empty', argv: [...BASE, '--cluster-name='], errors: ['--cluster-name must not be empty'] },

  // --controllers
  {
    description: 'controllers * minus one',
    argv: [...BASE, '--controllers=*,-route'],
    want: {
      enabledControllers: [
        Controllers.CLOUD_NODE,
        Controllers.CLOUD_NODE_LIFECYCLE,
        Controllers.SERVICE_LB,
        Controllers.NODE_IPAM,
        ...VOLUME_CONTROLLERS,
      ],
    },
  },
  {
    description: 'controllers by alias only',
    argv: [...BASE, '--controllers=cloud-node'],
    want: { controllers: ['cloud-node'], enabledControllers: [Controllers.CLOUD_NODE] },
  },
  {
    description: 'controllers by canonical name',
    argv: [...BASE, '--controllers=service-lb-controller,node-route-controller'],
    want: { enabledControllers: [Controllers.SERVICE_LB, Controllers.NODE_ROUTE] },
  },
  {
    description: 'controllers disable before *',
    argv: [...BASE, '--controllers=-cloud-node-lifecycle,*'],
    want: {
      enabledControllers: [Controllers.CLOUD_NODE, Controllers.SERVICE_LB, Controllers.NODE_ROUTE, Controllers.NODE_IPAM, ...VOLUME_CONTROLLERS],
    },
  },
  {
    description: 'controllers first entry wins (enable)',
    argv: [...BASE, '--controllers=route,-route'],
    want: { enabledControllers: [Controllers.NODE_ROUTE] },
  },
  {
    description: 'controllers first entry wins (disable)',
    argv: [...BASE, '--controllers=-route,route,*'],
    want: {
      enabledControllers: [
        Controllers.CLOUD_NODE,
        Controllers.CLOUD_NODE_LIFECYCLE,
        Controllers.SERVICE_LB,
        Controllers.NODE_IPAM,
        ...VOLUME_CONTROLLERS,
      ],
    },
  },
  {
    description: 'volume controllers by alias',
    argv: [...BASE, '--controllers=volume-provisioner,volume-attacher,volume-resizer,pvl'],
    want: { enabledControllers: VOLUME_CONTROLLERS },
  },
  { description: 'controllers nodeipam alias', argv: [...BASE, '--controllers=nodeipam'], want: { enabledControllers: [Controllers.NODE_IPAM] } },
  {
    description: 'controllers repeated flag appends',
    argv: [...BASE, '--controllers', 'cloud-node', '--controllers=service'],
    want: { controllers: ['cloud-node', 'service'], enabledControllers: [Controllers.CLOUD_NODE, Controllers.SERVICE_LB] },
  },
  {
    description: 'controllers empty enables none, with a warning',
    argv: [...BASE, '--controllers='],
    want: {
      controllers: [],
      enabledControllers: [],
      warnings: ['--controllers= enables no controller: the host will only serve /healthz and /metrics'],
    },
  },
  {
    description: 'controllers unknown name lists valid ones',
    argv: [...BASE, '--controllers=*,-nodes,bogus'],
    errors: [
      'unknown controller "-nodes"',
      'unknown controller "bogus"',
      'cloud-node-controller (alias cloud-node)',
      'node-route-controller (alias route)',
    ],
    errorCount: 2,
  },

  // Worker counts
  {
    description: 'concurrent-node-syncs',
    argv: [...BASE, '--concurrent-node-syncs=5'],
    want: { concurrentNodeSyncs: 5, concurrentNodeStatusUpdates: 5 },
  },
  {
    description: 'concurrent-node-syncs 0',
    argv: [...BASE, '--concurrent-node-syncs=0'],
    errors: ['--concurrent-node-syncs="0" is invalid: want an integer greater than 0'],
  },
  {
    description: 'concurrent-node-syncs not an integer',
    argv: [...BASE, '--concurrent-node-syncs=1.5'],
    errors: ['--concurrent-node-syncs="1.5" is invalid'],
  },
  {
    description: 'concurrent-node-status-updates explicit',
    argv: [...BASE, '--concurrent-node-syncs=2', '--concurrent-node-status-updates=7'],
    want: { concurrentNodeSyncs: 2, concurrentNodeStatusUpdates: 7 },
  },
  {
    description: 'concurrent-node-status-updates negative',
    argv: [...BASE, '--concurrent-node-status-updates=-1'],
    errors: ['--concurrent-node-status-updates="-1" is invalid'],
  },
  { description: 'concurrent-service-syncs', argv: [...BASE, '--concurrent-service-syncs=10'], want: { concurrentServiceSyncs: 10 } },
  { description: 'lb-resync-period', argv: [...BASE, '--lb-resync-period=30s'], want: { lbResyncPeriodMs: 30_000 } },
  { description: 'lb-resync-period 0 disables', argv: [...BASE, '--lb-resync-period=0'], want: { lbResyncPeriodMs: 0 } },
  { description: 'lb-resync-period invalid', argv: [...BASE, '--lb-resync-period=often'], errors: ['--lb-resync-period="often" is invalid'] },
  {
    description: 'concurrent-service-syncs 0',
    argv: [...BASE, '--concurrent-service-syncs=0'],
    errors: ['--concurrent-service-syncs="0" is invalid'],
  },

  // API client limits
  {
    description: 'kube-api-qps and burst',
    argv: [...BASE, '--kube-api-qps=50', '--kube-api-burst=100'],
    want: { kubeApiQps: 50, kubeApiBurst: 100 },
  },
  { description: 'kube-api-qps fractional', argv: [...BASE, '--kube-api-qps=0.5'], want: { kubeApiQps: 0.5 } },
  {
    description: 'kube-api-qps 0',
    argv: [...BASE, '--kube-api-qps=0'],
    errors: ['--kube-api-qps="0" is invalid: want a number greater than 0'],
    errorCount: 1,
  },
  {
    description: 'kube-api-burst below qps',
    argv: [...BASE, '--kube-api-qps=50'],
    errors: ['--kube-api-burst=30 is smaller than --kube-api-qps=50: raise --kube-api-burst'],
  },
  {
    description: 'kube-api-burst not a number',
    argv: [...BASE, '--kube-api-burst=lots'],
    errors: ['--kube-api-burst="lots" is invalid'],
    errorCount: 1,
  },

  // Serving
  { description: 'bind-address IPv4', argv: [...BASE, '--bind-address=127.0.0.1'], want: { bindAddress: '127.0.0.1' } },
  { description: 'bind-address IPv6', argv: [...BASE, '--bind-address', '::'], want: { bindAddress: '::' } },
  {
    description: 'bind-address host name',
    argv: [...BASE, '--bind-address=localhost'],
    errors: ['--bind-address="localhost" is invalid: want an IP address'],
  },
  { description: 'bind-address short IPv4 form', argv: [...BASE, '--bind-address=127.1'], errors: ['--bind-address="127.1" is invalid'] },
  { description: 'secure-port 0 disables', argv: [...BASE, '--secure-port=0'], want: { securePort: 0 } },
  { description: 'secure-port max', argv: [...BASE, '--secure-port=65535'], want: { securePort: 65535 } },
  {
    description: 'secure-port out of range',
    argv: [...BASE, '--secure-port=65536'],
    errors: ['--secure-port="65536" is invalid: want a port from 1 to 65535, or 0'],
  },
  { description: 'secure-port negative', argv: [...BASE, '--secure-port=-1'], errors: ['--secure-port="-1" is invalid'] },
  {
    description: 'tls both files',
    argv: [...BASE, `--tls-cert-file=${CERT}`, `--tls-private-key-file=${KEY}`],
    want: serving({ tls: { certFile: CERT, keyFile: KEY } }),
  },
  { description: 'cert-dir made absolute', argv: [...BASE, '--cert-dir=certs'], want: serving({ certDir: path.resolve('certs') }) },
  { description: 'tls-min-version Go name', argv: [...BASE, '--tls-min-version=VersionTLS13'], want: serving({ tlsMinVersion: 'TLSv1.3' }) },
  {
    description: 'tls-min-version unknown',
    argv: [...BASE, '--tls-min-version=TLSv1.2'],
    errors: ['--tls-min-version="TLSv1.2" is invalid: use one of VersionTLS10'],
  },
  {
    description: 'tls-cipher-suites: Go names become OpenSSL names, TLS 1.3 suites stay on',
    argv: [...BASE, '--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305'],
    want: serving({
      tlsCiphers:
        'TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-CHACHA20-POLY1305',
    }),
  },
  {
    description: 'tls-curve-preferences: Go CurveIDs become OpenSSL groups',
    argv: [...BASE, '--tls-curve-preferences=23,24', '--tls-curve-preferences=29'],
    want: serving({ tlsCurves: 'P-256:P-384:X25519' }),
  },
  {
    description: 'tls-curve-preferences: out of range, twice, unknown, all in one line',
    argv: [...BASE, '--tls-curve-preferences=0,29,29,65535,P-256'],
    errors: ['--tls-curve-preferences: "0" is not a CurveID (1-65535); 29 is given twice; 65535 is not supported by this Node.js (OpenSSL '],
  },
  {
    description: "webhook TLS flags are checked like the secure port's",
    argv: [
      ...BASE,
      '--webhook-tls-min-version=TLSv1.3',
      '--webhook-tls-cipher-suites=AES128-SHA',
      '--webhook-tls-curve-preferences=1',
      '--webhook-tls-sni-cert-key=only-one.crt',
    ],
    errors: [
      '--webhook-tls-min-version="TLSv1.3" is invalid',
      '--webhook-tls-cipher-suites: unknown cipher suite "AES128-SHA"',
      '--webhook-tls-curve-preferences: 1 is not supported',
      '--webhook-tls-sni-cert-key="only-one.crt" is invalid: use cert.crt,cert.key',
    ],
  },
  {
    description: 'tls-cipher-suites unknown',
    argv: [...BASE, '--tls-cipher-suites=ECDHE-RSA-AES128-GCM-SHA256'],
    errors: ['--tls-cipher-suites: unknown cipher suite "ECDHE-RSA-AES128-GCM-SHA256": use Go\'s names'],
  },
  { description: 'client-ca-file readable', argv: [...BASE, `--client-ca-file=${CERT}`], want: authn({ clientCaFile: CERT }) },
  { description: 'client-ca-file unreadable', argv: [...BASE, `--client-ca-file=${MISSING}`], errors: ['cannot read --client-ca-file'] },
  {
    description: 'authentication lookup flags',
    argv: [...BASE, '--authentication-skip-lookup', '--authentication-tolerate-lookup-failure=true', '--authentication-token-webhook-cache-ttl=0s'],
    want: authn({ skipLookup: true, tolerateLookupFailure: true, tokenCacheTtlMs: 0 }),
  },
  {
    description: 'authentication-kubeconfig and authorization-kubeconfig',
    argv: [...BASE, `--authentication-kubeconfig=${CERT}`, `--authorization-kubeconfig=${KEY}`],
    want: {
      serving: {
        ...DEFAULT_SERVING,
        authentication: { ...DEFAULT_SERVING.authentication, kubeconfig: CERT },
        authorization: { ...DEFAULT_SERVING.authorization, kubeconfig: KEY },
      },
    },
  },
  {
    description: 'requestheader flags: header names lower-cased, empty list allowed',
    argv: [
      ...BASE,
      `--requestheader-client-ca-file=${CERT}`,
      '--requestheader-allowed-names=front-proxy',
      '--requestheader-username-headers=X-User',
      '--requestheader-group-headers=',
      '--requestheader-uid-headers=X-Uid',
      '--requestheader-extra-headers-prefix=X-Extra-',
    ],
    want: requestHeader({
      clientCaFile: CERT,
      allowedNames: ['front-proxy'],
      usernameHeaders: ['x-user'],
      groupHeaders: [],
      uidHeaders: ['x-uid'],
      extraHeaderPrefixes: ['x-extra-'],
    }),
  },
  {
    description: 'requestheader header with a space',
    argv: [...BASE, '--requestheader-username-headers=X User'],
    errors: ['--requestheader-username-headers: "X User" is not an HTTP header name'],
  },
  {
    description: 'authorization-always-allow-paths replace the default',
    argv: [...BASE, '--authorization-always-allow-paths=/healthz,/metrics/*'],
    want: authz({ alwaysAllowPaths: ['/healthz', '/metrics/*'] }),
  },
  {
    description: 'authorization-always-allow-paths with an inner *',
    argv: [...BASE, '--authorization-always-allow-paths=/a*b'],
    errors: ['"/a*b" is invalid: "*" may only end a path'],
  },
  {
    description: 'authorization cache TTLs',
    argv: [...BASE, '--authorization-webhook-cache-authorized-ttl=1m', '--authorization-webhook-cache-unauthorized-ttl=0'],
    want: authz({ allowCacheTtlMs: 60_000, denyCacheTtlMs: 0 }),
  },
  {
    description: 'tls cert without key',
    argv: [...BASE, `--tls-cert-file=${CERT}`],
    errors: ['--tls-cert-file needs --tls-private-key-file: pass both, or neither for a self-signed certificate'],
  },
  { description: 'tls key without cert', argv: [...BASE, `--tls-private-key-file=${KEY}`], errors: ['--tls-private-key-file needs --tls-cert-file'] },
  {
    description: 'tls unreadable files',
    argv: [...BASE, `--tls-cert-file=${MISSING}`, `--tls-private-key-file=${MISSING}`],
    errors: ['cannot read --tls-cert-file', 'cannot read --tls-private-key-file'],
    errorCount: 2,
  },

  // --leader-elect and other booleans
  { description: 'leader-elect=false accepted', argv: [...BASE, '--leader-elect=false'], want: { leaderElect: false } },
  { description: 'leader-elect bare is true', argv: [...BASE, '--leader-elect'], want: { leaderElect: true } },
  { description: 'leader-elect=1 (Go bool spelling)', argv: [...BASE, '--leader-elect=1'], want: { leaderElect: true } },
  {
    description: 'leader-elect not a bool',
    argv: [...BASE, '--leader-elect=maybe'],
    errors: ['--leader-elect="maybe" is invalid: use --leader-elect=true or --leader-elect=false'],
  },
  {
    description: 'leader election settings parsed',
    argv: [
      ...BASE,
      '--leader-elect-lease-duration=4s',
      '--leader-elect-renew-deadline=3s',
      '--leader-elect-retry-period=500ms',
      '--leader-elect-resource-name=my-ccm',
      '--leader-elect-resource-namespace=ccm',
      '--plugin-unready-lease-release-timeout=0',
    ],
    want: {
      leaderElection: {
        leaseDurationMs: 4000,
        renewDeadlineMs: 3000,
        retryPeriodMs: 500,
        resourceLock: 'leases',
        resourceName: 'my-ccm',
        resourceNamespace: 'ccm',
        pluginUnreadyReleaseMs: 0,
      },
    },
  },
  {
    description: 'plugin-unready-lease-release-timeout negative',
    argv: [...BASE, '--plugin-unready-lease-release-timeout=-5s'],
    errors: ['--plugin-unready-lease-release-timeout="-5s" is invalid: want a duration of 0 or more'],
  },
  {
    description: 'lease duration not above renew deadline',
    argv: [...BASE, '--leader-elect-lease-duration=10s'],
    errors: ['--leader-elect-lease-duration=10s must be greater than --leader-elect-renew-deadline=10s'],
    errorCount: 1,
  },
  {
    description: 'renew deadline not above 1.2 × retry period',
    argv: [...BASE, '--leader-elect-renew-deadline=2s', '--leader-elect-retry-period=2s'],
    errors: ['--leader-elect-renew-deadline=2s must be greater than 1.2 × --leader-elect-retry-period=2s'],
    errorCount: 1,
  },
  {
    description: 'renew deadline exactly 1.2 × retry period is refused',
    argv: [...BASE, '--leader-elect-renew-deadline=1200ms', '--leader-elect-retry-period=1s'],
    errors: ['must be greater than 1.2 ×'],
    errorCount: 1,
  },
  {
    description: 'zero retry period',
    argv: [...BASE, '--leader-elect-retry-period=0s'],
    errors: ['--leader-elect-retry-period="0s" is invalid: want a duration greater than 0'],
    errorCount: 1,
  },
  {
    description: 'resource lock other than leases',
    argv: [...BASE, '--leader-elect-resource-lock=endpoints'],
    errors: ['--leader-elect-resource-lock="endpoints" is not supported (upstream removed every lock but leases): use leases'],
  },
  {
    description: 'bad lease name',
    argv: [...BASE, '--leader-elect-resource-name=Bad_Name'],
    errors: ['--leader-elect-resource-name="Bad_Name" is invalid'],
  },
  {
    description: 'bad lease namespace',
    argv: [...BASE, '--leader-elect-resource-namespace=a.b'],
    errors: ['--leader-elect-resource-namespace="a.b" is invalid'],
  },
  {
    description: 'bad leader election settings are ignored without --leader-elect, as upstream',
    argv: [...BASE, '--leader-elect=false', '--leader-elect-lease-duration=1s'],
    want: { leaderElect: false },
  },
  {
    description: 'use-service-account-credentials=false accepted',
    argv: [...BASE, '--use-service-account-credentials=false'],
    want: { useServiceAccountCredentials: false },
  },
  {
    description: 'use-service-account-credentials bare means true',
    argv: [...BASE, '--use-service-account-credentials'],
    want: { useServiceAccountCredentials: true },
  },
  {
    description: 'use-service-account-credentials=true accepted',
    argv: [...BASE, '--use-service-account-credentials=true'],
    want: { useServiceAccountCredentials: true },
  },
  {
    description: 'use-service-account-credentials=maybe refused',
    argv: [...BASE, '--use-service-account-credentials=maybe'],
    errors: ['--use-service-account-credentials'],
    errorCount: 1,
  },
  {
    description: 'bool value as a separate word is an argument, as in pflag',
    argv: [...BASE, '--leader-elect', 'false'],
    errors: ['unexpected argument "false" after --leader-elect', 'e.g. --leader-elect=false'],
  },
  {
    description: 'bare bool does not swallow the next flag',
    argv: [...BASE, '--configure-cloud-routes', '--cluster-name=x'],
    want: { configureCloudRoutes: true, clusterName: 'x' },
  },
  { description: 'configure-cloud-routes=false', argv: [...BASE, '--configure-cloud-routes=false'], want: { configureCloudRoutes: false } },
  { description: 'configure-cloud-routes=F', argv: [...BASE, '--configure-cloud-routes=F'], want: { configureCloudRoutes: false } },
  {
    description: 'allocate-node-cidrs needs cluster-cidr',
    argv: [...BASE, '--allocate-node-cidrs'],
    errors: ['--allocate-node-cidrs=true needs --cluster-cidr'],
    errorCount: 1,
  },
  {
    description: 'allocate-node-cidrs default mask /24',
    argv: [...BASE, '--allocate-node-cidrs', '--cluster-cidr=10.244.0.0/16'],
    want: { allocateNodeCidrs: true, nodeCidrMaskSizes: [24], warnings: [] },
  },
  {
    description: 'allocate-node-cidrs dual-stack defaults 24 and 64',
    argv: [...BASE, '--allocate-node-cidrs', '--cluster-cidr=10.244.0.0/16,fd00:10:244::/56'],
    want: { nodeCidrMaskSizes: [24, 64] },
  },
  {
    description: 'node-cidr-mask-size single-stack',
    argv: [...BASE, '--allocate-node-cidrs', '--cluster-cidr=10.244.0.0/16', '--node-cidr-mask-size=26'],
    want: { nodeCidrMaskSizes: [26] },
  },
  {
    description: 'node-cidr-mask-size-ipv4/-ipv6 dual-stack',
    argv: [
      ...BASE,
      '--allocate-node-cidrs',
      '--cluster-cidr=fd00:10:244::/56,10.244.0.0/16',
      '--node-cidr-mask-size-ipv4=25',
      '--node-cidr-mask-size-ipv6=72',
    ],
    want: { nodeCidrMaskSizes: [72, 25] },
  },
  {
    description: 'node-cidr-mask-size refused with dual-stack',
    argv: [...BASE, '--allocate-node-cidrs', '--cluster-cidr=10.244.0.0/16,fd00:10:244::/56', '--node-cidr-mask-size=24'],
    errors: ['--node-cidr-mask-size is not allowed with a dual-stack --cluster-cidr'],
    errorCount: 1,
  },
  {
    description: 'node-cidr-mask-size with a per-family flag',
    argv: [...BASE, '--allocate-node-cidrs', '--cluster-cidr=10.244.0.0/16', '--node-cidr-mask-size=24', '--node-cidr-mask-size-ipv4=24'],
    errors: ['are not allowed together with --node-cidr-mask-size'],
  },
  {
    description: 'node-cidr-mask-size-ipv6 with an IPv4 cluster',
    argv: [...BASE, '--allocate-node-cidrs', '--cluster-cidr=10.244.0.0/16', '--node-cidr-mask-size-ipv6=64'],
    errors: ['--node-cidr-mask-size-ipv6 is not allowed with a single-stack IPv4 --cluster-cidr'],
  },
  {
    description: 'node mask larger than the cluster CIDR',
    argv: [...BASE, '--allocate-node-cidrs', '--cluster-cidr=10.244.0.0/16', '--node-cidr-mask-size=8'],
    errors: ['--node-cidr-mask-size=8 does not fit --cluster-cidr 10.244.0.0/16: want a node mask size from 16 to 32'],
    errorCount: 1,
  },
  {
    description: 'node mask too fine for the bitmap',
    argv: [...BASE, '--allocate-node-cidrs', '--cluster-cidr=10.0.0.0/8', '--node-cidr-mask-size-ipv4=28'],
    errors: ['into more than 2^16 ranges'],
  },
  {
    description: 'node-cidr-mask-size not a number',
    argv: [...BASE, '--node-cidr-mask-size=big'],
    errors: ['--node-cidr-mask-size="big" is invalid'],
  },
  {
    description: 'cidr-allocator-type other than RangeAllocator refused when allocating',
    argv: [...BASE, '--allocate-node-cidrs', '--cluster-cidr=10.244.0.0/16', '--cidr-allocator-type=FooAllocator'],
    errors: ['--cidr-allocator-type="FooAllocator" is not supported by this build: use RangeAllocator'],
    errorCount: 1,
  },
  { description: 'cluster-cidr=foo', argv: [...BASE, '--cluster-cidr=foo'], errors: ['--cluster-cidr="foo" is invalid: "foo" is not a CIDR'] },

  // Logging
  { description: '-v N', argv: [...BASE, '-v', '3'], want: { verbosity: 3 } },
  { description: '-v=N', argv: [...BASE, '-v=4'], want: { verbosity: 4 } },
  { description: '-vN', argv: [...BASE, '-v2'], want: { verbosity: 2 } },
  { description: '--v=N', argv: [...BASE, '--v=5'], want: { verbosity: 5 } },
  { description: '--v N', argv: [...BASE, '--v', '1'], want: { verbosity: 1 } },
  { description: 'verbosity negative', argv: [...BASE, '-v=-1'], errors: ['--v="-1" is invalid: want an integer of 0 or more'] },
  { description: 'logging-format text', argv: [...BASE, '--logging-format=text'], want: { loggingFormat: 'text' } },
  {
    description: 'logging-format unknown',
    argv: [...BASE, '--logging-format=xml'],
    errors: ['--logging-format="xml" is invalid: use one of json, text'],
  },

  // Routes and CIDRs
  { description: 'cluster-cidr single', argv: [...BASE, '--cluster-cidr=10.244.0.0/16'], want: { clusterCidrs: ['10.244.0.0/16'] } },
  {
    description: 'cluster-cidr dual-stack',
    argv: [...BASE, '--cluster-cidr=10.244.0.0/16,fd00:10:244::/56'],
    want: { clusterCidrs: ['10.244.0.0/16', 'fd00:10:244::/56'] },
  },
  { description: 'cluster-cidr invalid', argv: [...BASE, '--cluster-cidr=10.244.0.0/33'], errors: ['"10.244.0.0/33" is not a CIDR'] },
  { description: 'cluster-cidr two IPv4', argv: [...BASE, '--cluster-cidr=10.0.0.0/16,10.1.0.0/16'], errors: ['one IPv4 and one IPv6'] },
  { description: 'cluster-cidr three', argv: [...BASE, '--cluster-cidr=10.0.0.0/16,fd00::/56,10.1.0.0/16'], errors: ['at most 2 CIDRs'] },
  {
    description: 'cidr-allocator-type stored',
    argv: [...BASE, '--cidr-allocator-type=CloudAllocator'],
    want: { cidrAllocatorType: 'CloudAllocator' },
  },

  // Volume controllers and the PV label webhook
  {
    description: 'volume defaults',
    argv: BASE,
    want: {
      volumes: {
        provisionerName: '',
        concurrentSyncs: 20,
        attachReconcilePeriodMs: 60_000,
        webhookPort: 10260,
        webhookBindAddress: '0.0.0.0',
        webhookTls: undefined,
        webhookCertDir: '',
        webhookTlsMinVersion: undefined,
        webhookTlsCiphers: undefined,
        webhookTlsCurves: undefined,
        webhookSniCerts: [],
      },
    },
  },
  {
    description: 'volume flags',
    argv: [
      ...BASE,
      '--volume-provisioner-name=disk.example.com',
      '--concurrent-volume-syncs=50',
      '--volume-attach-reconcile-period=30s',
      '--webhook-secure-port=0',
      '--webhook-bind-address=127.0.0.1',
      `--webhook-tls-cert-file=${CERT}`,
      `--webhook-tls-private-key-file=${KEY}`,
      `--webhook-cert-dir=${DIR}`,
      '--webhook-tls-min-version=VersionTLS13',
      '--webhook-tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256',
      '--webhook-tls-curve-preferences=29,23',
      `--webhook-tls-sni-cert-key=${CERT},${KEY}`,
      `--webhook-tls-sni-cert-key=${CERT},${KEY}:Webhook.Example.com,*.svc`,
    ],
    want: {
      volumes: {
        provisionerName: 'disk.example.com',
        concurrentSyncs: 50,
        attachReconcilePeriodMs: 30_000,
        webhookPort: 0,
        webhookBindAddress: '127.0.0.1',
        webhookTls: { certFile: CERT, keyFile: KEY },
        webhookCertDir: DIR,
        webhookTlsMinVersion: 'TLSv1.3',
        webhookTlsCiphers: 'TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:ECDHE-RSA-AES128-GCM-SHA256',
        webhookTlsCurves: 'X25519:P-256',
        webhookSniCerts: [
          { certFile: CERT, keyFile: KEY, names: [] },
          { certFile: CERT, keyFile: KEY, names: ['webhook.example.com', '*.svc'] },
        ],
      },
    },
  },
  {
    description: 'volume-provisioner-name invalid',
    argv: [...BASE, '--volume-provisioner-name=Disk_Example'],
    errors: ['--volume-provisioner-name: "Disk_Example" is not a valid CSI driver name'],
  },
  {
    description: 'volume-provisioner-name too long',
    argv: [...BASE, `--volume-provisioner-name=${'a'.repeat(64)}`],
    errors: ['is not a valid CSI driver name'],
  },
  { description: 'concurrent-volume-syncs 0', argv: [...BASE, '--concurrent-volume-syncs=0'], errors: ['--concurrent-volume-syncs="0" is invalid'] },
  {
    description: 'volume-attach-reconcile-period 0',
    argv: [...BASE, '--volume-attach-reconcile-period=0'],
    errors: ['--volume-attach-reconcile-period'],
  },
  {
    description: 'webhook-secure-port out of range',
    argv: [...BASE, '--webhook-secure-port=70000'],
    errors: ['--webhook-secure-port="70000" is invalid'],
  },
  {
    description: 'webhook-bind-address not an IP',
    argv: [...BASE, '--webhook-bind-address=localhost'],
    errors: ['--webhook-bind-address="localhost" is invalid'],
  },
  {
    description: 'webhook cert without key',
    argv: [...BASE, `--webhook-tls-cert-file=${CERT}`],
    errors: ['--webhook-tls-cert-file and --webhook-tls-private-key-file go together'],
  },
  {
    description: 'webhook cert unreadable',
    argv: [...BASE, `--webhook-tls-cert-file=${MISSING}`, `--webhook-tls-private-key-file=${KEY}`],
    errors: ['cannot read --webhook-tls-cert-file'],
  },

  // --provider-arg
  {
    description: 'provider-arg words go to the spawned plugin in order, commas and = kept',
    argv: ['--cloud-provider=local', '--provider-arg=--cluster-id=k8s', '--provider-arg', '--private=false', '--provider-arg=--tags=a=1,b=2'],
    want: { providerArgs: ['--cluster-id=k8s', '--private=false', '--tags=a=1,b=2'] },
  },
  { description: 'provider-arg defaults to none', argv: BASE, want: { providerArgs: [] } },
  {
    description: 'provider-arg with plugin-endpoint has no plugin to go to',
    argv: [...BASE, '--provider-arg=--x=1'],
    errors: ['--provider-arg=--x=1 has no plugin to go to', "provider container's args"],
    errorCount: 1,
  },

  // Provider-owned and removed flags (test/unit/config/real-command-lines.test.ts runs whole real command lines)
  {
    description: 'a provider-owned flag names its owner and the words to pass instead',
    argv: [...BASE, '--cluster-id', 'k8s'],
    errors: [
      '--cluster-id belongs to cloud-provider-ionoscloud, not to this host',
      '--provider-arg=--cluster-id=k8s',
      '--cluster-id=k8s in the provider container',
    ],
    errorCount: 1,
  },
  {
    description: 'a provider-owned controller names its owner',
    argv: [...BASE, '--controllers=*,tagging'],
    errors: ["--controllers=tagging belongs to cloud-provider-aws's tagging controller", 'use them with --cloud-provider=aws'],
    errorCount: 1,
  },
  {
    description: "with --cloud-provider=aws, whose plugin declares them, AWS's own flags and tagging controller go to the provider",
    argv: [
      '--cloud-provider=aws',
      '--plugin-endpoint=unix:///run/ccm/provider.sock',
      '--controllers=*,tagging',
      '--tags=Key1=Val1,Key2=Val2',
      '--resources',
      'instance',
    ],
    want: { controllers: ['*'], providerFlags: ['--tags=Key1=Val1,Key2=Val2', '--resources=instance'], providerControllers: ['tagging'] },
  },
  {
    description: "another provider's flags stay refused with --cloud-provider=aws",
    argv: ['--cloud-provider=aws', '--plugin-endpoint=unix:///run/ccm/provider.sock', '--tags=a=b', '--cluster-id=k8s'],
    errors: ['--cluster-id belongs to cloud-provider-ionoscloud'],
    errorCount: 1,
  },
  {
    description: 'disabling a provider-owned controller only warns',
    argv: [...BASE, '--controllers=*,-tagging'],
    want: {
      controllers: ['*'],
      warnings: ["--controllers=-tagging has no effect: tagging belongs to cloud-provider-aws's tagging controller, not to this host"],
    },
  },
  {
    description: "a provider's CIDR allocator names its owner, without the RangeAllocator error",
    argv: [...BASE, '--allocate-node-cidrs', '--cidr-allocator-type=CloudAllocator'],
    errors: ["--cidr-allocator-type=CloudAllocator belongs to the provider's own node IPAM"],
    errorCount: 1,
  },
  {
    description: 'provider-owned items of two owners are still one line',
    argv: [...BASE, '--tags=a=b', '--cluster-id=x', '--controllers=*,tagging'],
    errors: [
      "--tags, --controllers=tagging belong to cloud-provider-aws's tagging controller",
      '; --cluster-id belongs to cloud-provider-ionoscloud',
    ],
    errorCount: 1,
  },
  {
    description: 'removed upstream flag --address',
    argv: [...BASE, '--address=0.0.0.0'],
    errors: ['--address is not accepted', '--bind-address'],
    errorCount: 1,
  },

  // Unknown flags, arguments, missing values
  {
    description: "an unknown flag says how to hand a provider's own flag to the provider",
    argv: [...BASE, '--bogus', '1'],
    errors: ["if it is your provider's own flag, pass it to the provider instead: --provider-arg=--bogus=1 when the host spawns the plugin"],
    errorCount: 1,
  },
  { description: 'unknown flag', argv: [...BASE, '--bogus'], errors: ['unknown flag --bogus', '--help'], errorCount: 1 },
  {
    description: 'unknown flag with a separate value is one error',
    argv: [...BASE, '--bogus', 'value'],
    errors: ['unknown flag --bogus'],
    errorCount: 1,
  },
  {
    description: 'misspelt flag gets a suggestion',
    argv: [...BASE, '--kubeconfg=/x'],
    errors: ['unknown flag --kubeconfg: did you mean --kubeconfig?'],
  },
  { description: 'unknown short flag', argv: [...BASE, '-q'], errors: ['unknown flag -q'] },
  { description: 'positional argument', argv: [...BASE, 'extra'], errors: ['unexpected argument "extra"'], errorCount: 1 },
  { description: 'arguments after --', argv: [...BASE, '--', '--cluster-name=x'], errors: ['unexpected argument "--cluster-name=x"'], errorCount: 1 },
  {
    description: 'value flag at the end without a value',
    argv: [...BASE, '--cluster-name'],
    errors: ['--cluster-name needs a value: pass --cluster-name=VALUE'],
    errorCount: 1,
  },

  // Every problem at once
  {
    description: 'many problems are reported together',
    argv: [
      '--plugin-env=9=x',
      '--leader-elect-lease-duration=1s',
      '--concurrent-node-syncs=0',
      '--kube-api-qps=-1',
      '--bind-address=nope',
      '--secure-port=99999',
      '--logging-format=yaml',
      '--node-monitor-period=soon',
      '--controllers=*,-nope',
      '--nope',
      '--tls-cert-file',
    ],
    errors: [
      '--tls-cert-file needs a value',
      'unknown flag --nope',
      '--cloud-provider is required',
      '--plugin-env="9=x" is invalid',
      'unknown controller "-nope"',
      '--concurrent-node-syncs="0" is invalid',
      '--kube-api-qps="-1" is invalid',
      '--bind-address="nope" is invalid',
      '--secure-port="99999" is invalid',
      '--leader-elect-lease-duration=1s must be greater than --leader-elect-renew-deadline=10s',
      '--logging-format="yaml" is invalid',
      '--node-monitor-period="soon" is invalid',
    ],
    errorCount: 12,
  },
];

for (const c of cases) {
  test(c.description, (t) => {
    const result = parseHostArgs(c.argv, c.env ?? {}, { localPluginPath: c.localPluginPath ?? LOCAL_PLUGIN });
    if (c.errors) {
      if (!('errors' in result)) return t.fail(`want errors ${JSON.stringify(c.errors)}, got a config`);
      for (const want of c.errors) {
        t.true(
          result.errors.some((e) => e.includes(want)),
          `no error contains ${JSON.stringify(want)}; errors:\n${result.errors.join('\n')}`,
        );
      }
      for (const e of result.errors) t.false(e.includes('\n'), `error is not one line: ${e}`);
      if (c.errorCount !== undefined) t.is(result.errors.length, c.errorCount, result.errors.join('\n'));
      return;
    }
    if (!('config' in result)) return t.fail(`unexpected errors:\n${result.errors.join('\n')}`);
    for (const [key, value] of Object.entries(c.want ?? {})) {
      t.deepEqual(result.config[key as keyof HostConfig], value as never, key);
    }
  });
}

test('--help and -h return the help text, with defaults', (t) => {
  for (const flag of ['--help', '-h']) {
    const result = parseHostArgs([flag]);
    if (!('errors' in result) || result.help === undefined) return t.fail(`${flag}: no help`);
    t.deepEqual(result.errors, []);
    t.regex(result.help, /--cloud-provider <name>/);
    t.regex(result.help, /--plugin-start-timeout <duration>[\s\S]*\(default 60s\)/);
    t.regex(result.help, /--concurrent-service-syncs[\s\S]*\(default 10\)/);
    t.regex(result.help, /-v, --v <level>/);
  }
});

test('the config is deeply frozen', (t) => {
  const result = parseHostArgs(['--cloud-provider=foo', `--plugin-path=${EXE_DIR}`, '--plugin-env=A=1']);
  if (!('config' in result)) return t.fail(result.errors.join('\n'));
  const { config } = result;
  t.true(Object.isFrozen(config));
  t.true(Object.isFrozen(config.plugin));
  t.true(Object.isFrozen(config.pluginEnv));
  t.true(Object.isFrozen(config.enabledControllers));
  t.throws(() => {
    (config as { clusterName: string }).clusterName = 'x';
  });
});

test('relative paths become absolute', (t) => {
  const rel = path.relative(process.cwd(), CLOUD_CONF);
  const result = parseHostArgs([...BASE, `--cloud-config=${rel}`]);
  if (!('config' in result)) return t.fail(result.errors.join('\n'));
  t.is(result.config.cloudConfigPath, CLOUD_CONF);
});

test('the built-in local plugin path is <repo>/dist/plugins/local/main.js', async (t) => {
  const { BUILTIN_LOCAL_PLUGIN_PATH } = await import('../../../host/config/plugin.js');
  const repo = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../../..');
  t.is(BUILTIN_LOCAL_PLUGIN_PATH, path.join(repo, 'dist', 'plugins', 'local', 'main.js'));
});
