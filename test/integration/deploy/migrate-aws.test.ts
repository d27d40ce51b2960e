/**
 * Migration from the upstream AWS cloud-controller-manager to the host with
 * the AWS provider, and back, as docs/real-cluster.md ("Migrating from an
 * upstream cloud-controller-manager") tells an operator to do it, on moto
 * (test/helpers/moto.ts) and a control plane of the test's own (upstream has
 * no --node-selector: on the shared one it would take every test's Nodes and
 * Services).
 *
 * Upstream is k8s.io/cloud-provider-aws's own aws-cloud-controller-manager
 * (test/helpers/aws-ccm.ts) with the arguments of its example DaemonSet
 * (--cloud-provider=aws --v=2) and routes on, as the admin
 * (--use-service-account-credentials=false: its per-controller RBAC is not
 * the subject here). Ours is the rendered deploy/providers/aws pod, run by
 * test/helpers/pod-runner.ts with the shipped arguments, ServiceAccounts and
 * RBAC. Both are given the same Lease: cloud-controller-manager (the default
 * name of both) in the test's namespace instead of kube-system. Each side
 * signs its AWS requests with an access key of its own, so moto's journal
 * (moto-server.py, 6) tells who called what.
 *
 * The Services are those of SERVICES, each with its own name: a plain classic
 * ELB, classic ELBs with the common annotations (internal, additional tags,
 * attributes, health check, the operator's own and extra security groups),
 * with TLS listeners on an ACM certificate and an SSL negotiation policy,
 * with access logs into an S3 bucket, with proxy protocol, in subnets the
 * annotation names, and NLBs (ELBv2: load balancer, target groups,
 * listeners): with a health check of its own, with TLS listeners to TLS
 * targets, with Elastic IPs in named subnets, and with access logs and
 * proxy protocol v2 (target group attributes). The certificate, bucket,
 * Elastic IPs, subnets and security groups are made in moto first, as an
 * operator has them (Prepared). moto-aws.py describes what a CCM manages
 * (every ELB and NLB with its listeners, certificates, policies, targets,
 * health checks, attributes, groups, subnets, Elastic IPs and tags; the VPC's
 * security groups with their rules; the VPC's routes): "unchanged" compares
 * all of it. And each row says which AWS writes upstream's own code sends for
 * its load balancer on every sync, changing nothing (`rewrites`); ours, on
 * the switch, sends exactly those, as upstream does on the rollback.
 * Routes are on in both (--configure-cloud-routes=true, --cluster-cidr): the
 * Nodes have pod CIDRs, upstream routes them in the cluster's route table,
 * and ours adopts those routes (neither deletes nor re-creates one).
 *
 * Beside them, what the AWS Load Balancer Controller keeps in such a cluster
 * (LB_CONTROLLER_SERVICES; test/helpers/moto.ts seedLbController): an ALB for
 * an Ingress and an NLB for each of its Services, with their security
 * groups, listeners, rules and target groups, tagged as it tags them
 * (elbv2.k8s.aws/cluster; service.k8s.aws/stack and service.k8s.aws/resource,
 * or ingress.k8s.aws/stack and ingress.k8s.aws/resource), its rules on the
 * nodes' security group, and the Services as it leaves them (its finalizer, its NLB's name in their status). One has
 * the controller's class (service.k8s.aws/nlb), which neither CCM serves; one
 * has no class but aws-load-balancer-type: external, which upstream's AWS
 * provider answers ImplementedElsewhere (aws.go EnsureLoadBalancer,
 * isLBExternal in aws_loadbalancer.go), after upstream's service controller
 * has announced it (EnsuringLoadBalancer) and put its finalizer (so a
 * deletion waits for EnsureLoadBalancerDeleted, which answers nil for it).
 * Across the switch and the rollback neither side writes anything of them to
 * AWS (moto's journal: no write names their load balancers, target groups or
 * security groups), nothing of them changes, and ours writes nothing to those
 * Services and records nothing on them but what upstream does (for the
 * external one, EnsuringLoadBalancer; no Warning, no status, no condition).
 * The orphan sweep does not run for the AWS provider (the bridge lists no
 * load balancers); ours' /metrics shows it found nothing.
 *
 * | step | what the operator does | what must hold |
 * |------|------------------------|----------------|
 * | 1 | upstream runs           | Nodes initialized; each Service gets one load balancer, as its annotations ask |
 * | 2 | ours starts beside it   | ours sees upstream holding the Lease and waits: no AWS write, no Service or Node write |
 * | 3 | upstream stopped        | ours takes the Lease, adopts every load balancer: the same, no create, no delete, its AWS writes those upstream makes on a restart; Service status, finalizers and Nodes unchanged |
 * | 4 | ours stopped, upstream started again (rollback) | upstream takes the Lease back; nothing lost: same load balancers, Service status, finalizers, Nodes |
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CoordinationV1Api,
  CoreV1Api,
  type KubeConfig,
  type KubernetesObject,
  type V1Deployment,
  type V1Node,
  type V1Service,
} from '@kubernetes/client-node';
import { ControlPlane } from '../../controlplane/controlplane.js';
import { ManagedProcess } from '../../controlplane/managed-process.js';
import { freePorts, get } from '../../controlplane/probe.js';
import { auditLogFromNow, credentialIdOf, type AuditEvent } from '../../helpers/audit.js';
import { awsCloudControllerManager } from '../../helpers/aws-ccm.js';
import { fromApiServerRepair, LB_FINALIZER, lbService } from '../../helpers/lb.js';
import { patchServiceStatus } from '../../helpers/kube-patch.js';
import { renderProvider } from '../../helpers/manifests.js';
import { applyObjects, serviceAccountKubeConfig } from '../../helpers/service-account.js';
import {
  awsCloudConfig,
  motoJournal,
  mutating,
  startMoto,
  type MotoCall,
  MOTO_CLIENT_ENV,
  seedCluster,
  seedLbController,
  type LbControllerStack,
} from '../../helpers/moto.js';
import { createTestNode, testScope, UNINITIALIZED_TAINT, waitNodeInitialized } from '../../helpers/nodes.js';
import { runPod, type Pod } from '../../helpers/pod-runner.js';
import { awsCloudBinary, REPO } from '../../helpers/providers.js';
import { waitFor } from '../../helpers/wait.js';

const REGION = 'us-east-1';
/** The Lease both use: the default name of both (kube-system/cloud-controller-manager in a cluster), in the test's namespace. */
const LEASE = 'cloud-controller-manager';
/** The pod network: each Node's pod CIDR is a /24 of it, routed by the CCM in the cluster's route table. */
const CLUSTER_CIDR = '10.244.0.0/16';
/** The access key each side signs its AWS requests with (moto accepts any): the journal's caller. */
const UPSTREAM_KEY = 'AKIDUPSTREAMCCM';
const OURS_KEY = 'AKIDGRPCCCMHOST';
/**
 * Upstream's identity as its example (examples/existing-cluster/base) gives
 * it: the ServiceAccount kube-system/cloud-controller-manager (the one ours
 * uses too), the ClusterRole system:cloud-controller-manager bound to it, and
 * the authentication reader. With --use-service-account-credentials=true it
 * creates the per-controller ServiceAccounts node-controller,
 * service-controller and route-controller (and aws-cloud-provider, the
 * provider's own client) in kube-system and acts as them; their rights are
 * the API server's bootstrap roles system:controller:<name>. Checked to
 * matter: with ours' ClusterRole under upstream's name (as older renderings
 * had it) the rollback fails, upstream exiting on a 403 for serviceaccounts.
 */
const UPSTREAM_SA = { namespace: 'kube-system', name: 'cloud-controller-manager' } as const;
const rules = (groups: string[], resources: string[], verbs: string[]) => ({ apiGroups: groups, resources, verbs });
const UPSTREAM_RBAC: KubernetesObject[] = [
  { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { ...UPSTREAM_SA } },
  {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'system:cloud-controller-manager' },
    rules: [
      rules([''], ['events'], ['create', 'patch', 'update']),
      rules([''], ['nodes'], ['*']),
      rules([''], ['nodes/status'], ['patch']),
      rules([''], ['services', 'services/status'], ['list', 'patch', 'update', 'watch']),
      rules([''], ['serviceaccounts'], ['create', 'get', 'list', 'watch']),
      rules([''], ['serviceaccounts/token'], ['create']),
      rules([''], ['persistentvolumes'], ['get', 'list', 'update', 'watch']),
      rules([''], ['endpoints'], ['create', 'get', 'list', 'watch', 'update']),
      rules(['coordination.k8s.io'], ['leases'], ['create', 'get', 'list', 'watch', 'update']),
    ],
  } as KubernetesObject,
  {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'system:cloud-controller-manager' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:cloud-controller-manager' },
    subjects: [{ kind: 'ServiceAccount', ...UPSTREAM_SA }],
  } as KubernetesObject,
  {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'cloud-controller-manager:apiserver-authentication-reader', namespace: 'kube-system' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'extension-apiserver-authentication-reader' },
    subjects: [{ kind: 'ServiceAccount', ...UPSTREAM_SA }],
  } as KubernetesObject,
];
/** The users upstream acts as with --use-service-account-credentials=true: its per-controller ServiceAccounts. */
const UPSTREAM_CONTROLLERS = ['node-controller', 'service-controller', 'route-controller'].map((n) => `system:serviceaccount:kube-system:${n}`);
const RBAC_KINDS = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];

interface Elb {
  name: string;
  dns: string;
  instances: string[];
  listeners: string[];
  healthCheck: Record<string, unknown>;
  securityGroups: string[];
  subnets: string[];
  scheme: string;
  attributes: Record<string, unknown>;
  tags: Record<string, string>;
  /** Each listener by its load balancer port: protocols, certificate, its policies and those of its instance port. */
  frontends: Record<string, { protocols: string; certificate: string; policies: string[]; backendPolicies: string[] }>;
  /** The load balancer's policies: name -> `<type> <attribute>=<value>,...`. */
  policies: Record<string, string>;
}

/** An ELBv2 load balancer as moto-aws.py describe-nlbs gives it. */
interface Nlb {
  name: string;
  dns: string;
  type: string;
  scheme: string;
  subnets: string[];
  /** The Elastic IP of each subnet that has one: subnet -> `<allocation> <ip>`. */
  addresses: Record<string, string>;
  tags: Record<string, string>;
  attributes: Record<string, string>;
  securityGroups: string[];
  /** Each listener's rules by its port (an ALB's path rules; the default action of each). */
  rules: Record<string, string[]>;
  listeners: { port: number; protocol: string; targetGroup: string; targetProtocol: string; certificates: string[]; sslPolicy: string }[];
  targetGroups: {
    name: string;
    port: number;
    protocol: string;
    healthCheck: Record<string, unknown>;
    targets: string[];
    attributes: Record<string, string>;
  }[];
}

/** What the AWS account holds that a CCM manages: the load balancers and the VPC's security groups with their rules. */
interface Cloud {
  elbs: Elb[];
  nlbs: Nlb[];
  groups: Record<string, { id: string; tags: Record<string, string>; ingress: string[] }>;
  /** `<route table> <destination> -> <target> <state>` of every route table of the VPC. */
  routes: string[];
}

/** What an operator made in the account for the annotations of SERVICES (the test makes it in moto before upstream runs). */
interface Prepared {
  /** Security groups of the VPC. */
  custom: string;
  extra: string;
  /** An ACM certificate's ARN. */
  certificate: string;
  /** An S3 bucket for access logs. */
  bucket: string;
  /** The cluster's own subnet (in AZ), and two more in other zones, each with a Name tag, tagged for another cluster so this cluster's discovery never picks them: only the annotation puts a load balancer there. */
  clusterSubnet: string;
  subnets: { id: string; name: string }[];
  /** Elastic IPs (VPC domain), one per extra subnet. */
  eips: { allocation: string; ip: string }[];
}

const A = 'service.beta.kubernetes.io/aws-load-balancer-';
/**
 * Upstream's ensureLoadBalancer compares the classic ELB's attributes it wants
 * with what DescribeLoadBalancerAttributes answers, AdditionalAttributes
 * included, which it never sets (AWS lists elb.http.desyncmitigationmode): so
 * it modifies them, to the same values, on every sync.
 */
const MODIFY_ATTRIBUTES = 'ModifyLoadBalancerAttributes';
/** The names upstream gives its policies (aws_loadbalancer.go SSLNegotiationPolicyNameFormat, ProxyProtocolPolicyName). */
const SSL_POLICY = 'k8s-SSLNegotiationPolicy-ELBSecurityPolicy-TLS-1-2-2017-01';
const PROXY_POLICY = 'k8s-proxyprotocol-enabled';

/**
 * The LoadBalancer Services upstream makes load balancers for before the
 * switch, each with its own name: one per kind of AWS load balancer or
 * common annotation set. `upstreamMade` is what upstream must have made of
 * the annotations (so "unchanged" compares what the annotations asked for).
 */
const SERVICES: {
  name: string;
  what: string;
  ports: number[];
  annotations: (p: Prepared) => Record<string, string>;
  upstreamMade: (p: Prepared) => Record<string, unknown>;
  /** The AWS writes upstream's own code sends for this load balancer on every sync that finds it as it should be (idempotent: they set what is there). */
  rewrites: string[];
}[] = [
  {
    name: 'web',
    what: 'a classic ELB',
    ports: [80],
    annotations: () => ({}),
    upstreamMade: () => ({ scheme: 'internet-facing' }),
    rewrites: [MODIFY_ATTRIBUTES],
  },
  {
    name: 'internal',
    what: 'an internal classic ELB with extra tags and an extra security group',
    ports: [80, 443],
    annotations: (g) => ({
      [`${A}internal`]: 'true',
      [`${A}additional-resource-tags`]: 'team=payments,cost-center=42',
      [`${A}extra-security-groups`]: g.extra,
    }),
    upstreamMade: () => ({ scheme: 'internal', tags: { team: 'payments', 'cost-center': '42' } }),
    // ensureLoadBalancer adds the additional tags again on every sync.
    rewrites: ['AddTags', MODIFY_ATTRIBUTES],
  },
  {
    name: 'tuned',
    what: 'a classic ELB with attributes and a health check of its own',
    ports: [8080],
    annotations: () => ({
      [`${A}cross-zone-load-balancing-enabled`]: 'true',
      [`${A}connection-idle-timeout`]: '120',
      [`${A}connection-draining-enabled`]: 'true',
      [`${A}connection-draining-timeout`]: '45',
      [`${A}healthcheck-protocol`]: 'HTTP',
      [`${A}healthcheck-path`]: '/healthz',
      [`${A}healthcheck-healthy-threshold`]: '3',
      [`${A}healthcheck-unhealthy-threshold`]: '4',
      [`${A}healthcheck-timeout`]: '6',
      [`${A}healthcheck-interval`]: '15',
    }),
    upstreamMade: () => ({
      attributes: {
        CrossZoneLoadBalancing: { Enabled: true },
        ConnectionSettings: { IdleTimeout: 120 },
        ConnectionDraining: { Enabled: true, Timeout: 45 },
      },
      healthCheck: { HealthyThreshold: 3, UnhealthyThreshold: 4, Timeout: 6, Interval: 15 },
    }),
    rewrites: [MODIFY_ATTRIBUTES],
  },
  {
    name: 'own-groups',
    what: "a classic ELB in the operator's own security groups",
    ports: [80],
    annotations: (g) => ({ [`${A}security-groups`]: g.custom, [`${A}extra-security-groups`]: g.extra }),
    upstreamMade: (g) => ({ securityGroups: [g.custom, g.extra].sort() }),
    rewrites: [MODIFY_ATTRIBUTES],
  },
  {
    name: 'nlb',
    what: 'an NLB with tags, cross-zone and a health check of its own',
    ports: [80, 443],
    annotations: () => ({
      [`${A}type`]: 'nlb',
      [`${A}additional-resource-tags`]: 'team=edge',
      [`${A}cross-zone-load-balancing-enabled`]: 'true',
      [`${A}healthcheck-protocol`]: 'http',
      [`${A}healthcheck-path`]: '/healthz',
      [`${A}healthcheck-interval`]: '10',
    }),
    upstreamMade: () => ({ type: 'network', tags: { team: 'edge' }, attributes: { 'load_balancing.cross_zone.enabled': 'true' } }),
    // Upstream's bug: ensureTargetGroup compares the wanted health check path with its own request's (empty) one, not the target group's, so it modifies each target group of an HTTP health check on every sync (docs/real-cluster.md).
    rewrites: ['ModifyTargetGroup', 'ModifyTargetGroup'],
  },
  {
    name: 'tls',
    what: 'a classic ELB with an HTTPS listener on an ACM certificate, HTTP to the instances, and an SSL negotiation policy',
    ports: [80, 443],
    annotations: (p) => ({
      [`${A}ssl-cert`]: p.certificate,
      [`${A}ssl-ports`]: '443',
      [`${A}backend-protocol`]: 'http',
      [`${A}ssl-negotiation-policy`]: 'ELBSecurityPolicy-TLS-1-2-2017-01',
    }),
    upstreamMade: (p) => ({
      frontends: {
        '80': { protocols: 'HTTP->HTTP', certificate: '', policies: [] },
        '443': { protocols: 'HTTPS->HTTP', certificate: p.certificate, policies: [SSL_POLICY] },
      },
      policies: { [SSL_POLICY]: 'SSLNegotiationPolicyType Reference-Security-Policy=ELBSecurityPolicy-TLS-1-2-2017-01' },
    }),
    // EnsureLoadBalancer sets the negotiation policy on each TLS listener again on every sync.
    rewrites: [MODIFY_ATTRIBUTES, 'SetLoadBalancerPoliciesOfListener'],
  },
  {
    name: 'logged',
    what: 'a classic ELB with access logs into an S3 bucket',
    ports: [80],
    annotations: (p) => ({
      [`${A}access-log-enabled`]: 'true',
      [`${A}access-log-emit-interval`]: '5',
      [`${A}access-log-s3-bucket-name`]: p.bucket,
      [`${A}access-log-s3-bucket-prefix`]: 'migrate/elb',
    }),
    upstreamMade: (p) => ({ attributes: { AccessLog: { Enabled: true, EmitInterval: 5, S3BucketName: p.bucket, S3BucketPrefix: 'migrate/elb' } } }),
    rewrites: [MODIFY_ATTRIBUTES],
  },
  {
    name: 'proxied',
    what: 'a classic ELB with proxy protocol to every instance port',
    ports: [80, 443],
    annotations: () => ({ [`${A}proxy-protocol`]: '*' }),
    upstreamMade: () => ({
      frontends: { '80': { backendPolicies: [PROXY_POLICY] }, '443': { backendPolicies: [PROXY_POLICY] } },
      policies: { [PROXY_POLICY]: 'ProxyProtocolPolicyType ProxyProtocol=true' },
    }),
    // ensureLoadBalancer creates the proxy protocol policy again on every sync (its own comment says so).
    rewrites: ['CreateLoadBalancerPolicy', MODIFY_ATTRIBUTES],
  },
  {
    name: 'elb-subnets',
    what: 'a classic ELB in the subnets its annotation names (by ID and by Name tag)',
    ports: [80],
    annotations: (p) => ({ [`${A}subnets`]: `${p.clusterSubnet},${p.subnets[0]!.name}` }),
    upstreamMade: (p) => ({ subnets: [p.clusterSubnet, p.subnets[0]!.id].sort() }),
    rewrites: [MODIFY_ATTRIBUTES],
  },
  {
    name: 'nlb-tls',
    what: 'an NLB with a TLS listener on an ACM certificate with a negotiation policy, to TLS targets',
    ports: [80, 443],
    annotations: (p) => ({
      [`${A}type`]: 'nlb',
      [`${A}ssl-cert`]: p.certificate,
      [`${A}ssl-ports`]: '443',
      [`${A}backend-protocol`]: 'ssl',
      [`${A}ssl-negotiation-policy`]: 'ELBSecurityPolicy-TLS13-1-2-2021-06',
    }),
    upstreamMade: (p) => ({
      type: 'network',
      listeners: [
        { port: 80, protocol: 'TCP', targetProtocol: 'TCP', certificates: [], sslPolicy: '' },
        { port: 443, protocol: 'TLS', targetProtocol: 'TLS', certificates: [p.certificate], sslPolicy: 'ELBSecurityPolicy-TLS13-1-2-2021-06' },
      ],
    }),
    rewrites: [],
  },
  {
    name: 'nlb-eips',
    what: 'an NLB with an Elastic IP in each of the subnets its annotation names',
    ports: [80],
    annotations: (p) => ({
      [`${A}type`]: 'nlb',
      [`${A}subnets`]: `${p.subnets[0]!.name},${p.subnets[1]!.id}`,
      [`${A}eip-allocations`]: p.eips.map((e) => e.allocation).join(','),
    }),
    // Upstream pairs the allocations with the subnets in the order it resolves them: those named by ID first, then those by Name (aws.go resolveSubnetNameOrIDs), not the annotation's order.
    upstreamMade: (p) => ({
      type: 'network',
      subnets: p.subnets.map((s) => s.id).sort(),
      addresses: Object.fromEntries([p.subnets[1]!, p.subnets[0]!].map((s, i) => [s.id, `${p.eips[i]!.allocation} ${p.eips[i]!.ip}`])),
    }),
    rewrites: [],
  },
  {
    name: 'nlb-logged',
    what: 'an NLB with access logs into an S3 bucket and proxy protocol v2 to its targets (target group attributes)',
    ports: [80],
    annotations: (p) => ({
      [`${A}type`]: 'nlb',
      [`${A}access-log-enabled`]: 'true',
      [`${A}access-log-s3-bucket-name`]: p.bucket,
      [`${A}access-log-s3-bucket-prefix`]: 'migrate/nlb',
      // An NLB's proxy protocol: -proxy-protocol is the classic ELB's only (aws.go); upstream sets only the attributes AWS lists (moto-server.py, 11).
      [`${A}target-group-attributes`]: 'proxy_protocol_v2.enabled=true,preserve_client_ip.enabled=false',
    }),
    upstreamMade: (p) => ({
      type: 'network',
      attributes: { 'access_logs.s3.enabled': 'true', 'access_logs.s3.bucket': p.bucket, 'access_logs.s3.prefix': 'migrate/nlb' },
      targetGroups: [{ attributes: { 'proxy_protocol_v2.enabled': 'true', 'preserve_client_ip.enabled': 'false' } }],
    }),
    rewrites: [],
  },
];

/** The AWS Load Balancer Controller's Service class, finalizer and cluster tag (kubernetes-sigs/aws-load-balancer-controller). */
const LB_CONTROLLER_CLASS = 'service.k8s.aws/nlb';
const LB_CONTROLLER_FINALIZER = 'service.k8s.aws/resources';
const LB_CONTROLLER_TAG = 'elbv2.k8s.aws/cluster';
/** The Ingress whose ALB the controller keeps (no Ingress object: neither CCM reads Ingresses). */
const LB_CONTROLLER_INGRESS = 'shop';

/**
 * The Services the AWS Load Balancer Controller serves, each with the NLB it
 * made for it, there before the switch. `upstream` is what upstream's CCM
 * leaves on the Service (its finalizers, and the reasons of its events);
 * ours must leave exactly that.
 */
const LB_CONTROLLER_SERVICES: {
  name: string;
  what: string;
  loadBalancerClass?: string;
  annotations: Record<string, string>;
  nlb: Omit<LbControllerStack, 'stack'>;
  upstream: { finalizers: string[]; events: string[] };
}[] = [
  {
    name: 'lbc-nlb',
    what: "an NLB of the controller's class, instance targets",
    loadBalancerClass: LB_CONTROLLER_CLASS,
    annotations: { [`${A}nlb-target-type`]: 'instance', [`${A}scheme`]: 'internet-facing' },
    nlb: { scheme: 'internet-facing', targetType: 'instance' },
    // The service controller leaves every Service with a class alone.
    upstream: { finalizers: [LB_CONTROLLER_FINALIZER], events: [] },
  },
  {
    name: 'lbc-external',
    what: 'an NLB of the controller by aws-load-balancer-type: external (no class), pod IP targets',
    annotations: {
      [`${A}type`]: 'external',
      [`${A}nlb-target-type`]: 'ip',
      [`${A}scheme`]: 'internal',
      [`${A}target-group-attributes`]: 'preserve_client_ip.enabled=true',
    },
    nlb: { scheme: 'internal', targetType: 'ip', targets: ['10.49.1.50', '10.49.1.51'] },
    // The service controller announces it and puts its finalizer; the AWS provider then answers ImplementedElsewhere.
    upstream: { finalizers: [LB_CONTROLLER_FINALIZER, LB_FINALIZER], events: ['Normal EnsuringLoadBalancer'] },
  },
];

/** The instances behind a Service's load balancer (a classic ELB's; an NLB's targets in each of its target groups), or undefined if it has none yet. */
function backends(cloud: Cloud, row: (typeof SERVICES)[number], lbName: string): string[] | undefined {
  const elb = cloud.elbs.find((l) => l.name === lbName);
  if (elb) return elb.instances;
  const nlb = cloud.nlbs.find((l) => l.name === lbName);
  if (!nlb || nlb.targetGroups.length !== row.ports.length) return undefined;
  const sets = nlb.targetGroups.map((g) => [...new Set(g.targets.map((x) => x.split(':')[0]!))].sort().join());
  return new Set(sets).size === 1 ? sets[0]!.split(',') : undefined;
}

/** What a cloud-node controller decides about a Node. */
function nodeView(n: V1Node) {
  return {
    providerID: n.spec?.providerID,
    labels: n.metadata?.labels ?? {},
    taints: (n.spec?.taints ?? []).map((x) => `${x.key}=${x.value ?? ''}:${x.effect}`).sort(),
    addresses: (n.status?.addresses ?? []).map((a) => `${a.type}=${a.address}`).sort(),
  };
}

/** What a client of the Service sees of its load balancer, and what keeps it. */
function serviceView(s: V1Service) {
  return { uid: s.metadata?.uid, finalizers: s.metadata?.finalizers ?? [], ingress: s.status?.loadBalancer?.ingress ?? [] };
}

/** What a CCM could change on a Service of the AWS Load Balancer Controller: any write at all moves its resourceVersion. */
function lbControllerServiceView(s: V1Service) {
  return {
    uid: s.metadata?.uid,
    resourceVersion: s.metadata?.resourceVersion,
    finalizers: s.metadata?.finalizers ?? [],
    annotations: s.metadata?.annotations ?? {},
    ingress: s.status?.loadBalancer?.ingress ?? [],
    conditions: (s.status?.conditions ?? []).map((c) => `${c.type}=${c.status}`),
  };
}

/** Environment of an AWS client here: moto's journal caller key, no IMDS, any endpoint but moto's fails on a closed port. */
function awsEnv(key: string): Record<string, string> {
  return { ...MOTO_CLIENT_ENV, AWS_ACCESS_KEY_ID: key };
}

/** Mutating AWS calls of `caller` in `calls`, as `Action name`, sorted. */
function writesBy(calls: MotoCall[], caller: string): string[] {
  return calls
    .filter((c) => c.caller === caller && mutating(c))
    .map((c) => `${c.action}${c.name ? ` ${c.name}` : ''}`)
    .sort();
}

/** Mutating AWS calls of `caller` in `calls` that name the load balancer `lbName` (moto-server.py, 6), their actions sorted. */
function writesFor(calls: MotoCall[], caller: string, lbName: string): string[] {
  return calls
    .filter((c) => c.caller === caller && c.name === lbName && mutating(c))
    .map((c) => c.action)
    .sort();
}

const WRITES = ['create', 'update', 'patch', 'delete', 'deletecollection'];

/** Writes to Services and Nodes (what the audit policy logs) with ours' credentials (its containers' tokens: upstream shares its ServiceAccount). */
function oursWrites(events: AuditEvent[], pod: Pod): string[] {
  const ours = new Set([...pod.identities.values()].flatMap((i) => (i ? [i.credentialId] : [])));
  return events
    .filter((e) => ours.has(credentialIdOf(e)) && WRITES.includes(e.verb))
    .map(
      (e) => `${e.verb} ${e.objectRef?.resource ?? ''}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''} ${e.objectRef?.name ?? ''}`,
    );
}

/** The upstream AWS CCM as its example DaemonSet runs it, mapped to this machine (see the header). */
function startUpstream(binary: string, kubeconfig: string, cloudConfig: string, namespace: string, port: number, logPath: string): ManagedProcess {
  return ManagedProcess.spawn(
    'aws-cloud-controller-manager',
    binary,
    [
      '--v=2',
      '--cloud-provider=aws',
      // Routes on, as a cluster whose pod network is the VPC's route table runs it.
      '--configure-cloud-routes=true',
      `--cluster-cidr=${CLUSTER_CIDR}`,
      `--cloud-config=${cloudConfig}`,
      `--kubeconfig=${kubeconfig}`,
      '--use-service-account-credentials=true',
      '--leader-elect=true',
      `--leader-elect-resource-namespace=${namespace}`,
      `--leader-elect-resource-name=${LEASE}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${port}`,
    ],
    logPath,
    { keepAlive: true, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...awsEnv(UPSTREAM_KEY) } },
  );
}

async function leaseHolder(admin: KubeConfig, namespace: string): Promise<string> {
  const lease = await admin
    .makeApiClient(CoordinationV1Api)
    .readNamespacedLease({ name: LEASE, namespace })
    .catch(() => undefined);
  return lease?.spec?.holderIdentity ?? '';
}

/** The sum of the counts of the Service's events of `reason` (a recorder counts repeats on one Event). */
async function eventCount(core: CoreV1Api, svc: V1Service, reason: string): Promise<number> {
  const list = await core.listNamespacedEvent({ namespace: svc.metadata!.namespace!, fieldSelector: `involvedObject.uid=${svc.metadata!.uid}` });
  return list.items.filter((e) => e.reason === reason).reduce((n, e) => n + (e.count ?? 1), 0);
}

/** The Service's events as `<type> <reason>`, each once, sorted (the API server's repair loops' excepted). */
async function eventReasons(core: CoreV1Api, svc: V1Service): Promise<string[]> {
  const list = await core.listNamespacedEvent({ namespace: svc.metadata!.namespace!, fieldSelector: `involvedObject.uid=${svc.metadata!.uid}` });
  return [...new Set(list.items.filter((e) => !fromApiServerRepair(e)).map((e) => `${e.type} ${e.reason}`))].sort();
}

test("migration from the upstream AWS CCM on moto: ours waits on the shared Lease, adopts every ELB and NLB (annotated ones too) when upstream stops (no create, no delete, no change, Nodes untouched), and upstream takes them back on rollback with nothing lost; the AWS Load Balancer Controller's ALB, NLBs and Services are left alone by both", async (t) => {
  t.timeout(12 * 60_000);
  const dir = await mkdtemp(join(tmpdir(), 'ccm-migrate-aws-'));
  const [upstreamBin, providerBin] = await Promise.all([awsCloudControllerManager(), awsCloudBinary()]);
  const cp = await ControlPlane.start({ controllerManager: false, auditLog: true });
  t.teardown(() => cp.stop());
  const admin = cp.kubeConfig();
  const core = admin.makeApiClient(CoreV1Api);
  const ns = `migrate-${randomBytes(3).toString('hex')}`;
  await core.createNamespace({ body: { metadata: { name: ns } } });
  const scope = testScope('migrate-aws');

  const journal = join(dir, 'moto-journal.jsonl');
  const moto = await startMoto(dir, REGION, { journal });
  t.teardown(() => moto.stop());
  const seeded = await seedCluster(moto, { cluster: scope.prefix, instances: 2, net: 49 });
  const cloudConf = awsCloudConfig(moto, seeded, scope.prefix);
  const cloudConfigPath = join(dir, 'cloud.conf');
  await writeFile(cloudConfigPath, cloudConf);
  // Upstream's identity, as its example DaemonSet runs it (see UPSTREAM_RBAC).
  await applyObjects(admin, UPSTREAM_RBAC);
  await writeFile(join(dir, 'upstream-kubeconfig'), (await serviceAccountKubeConfig(admin, UPSTREAM_SA)).exportConfig(), { mode: 0o600 });
  const upstreamAudit = await auditLogFromNow(cp.auditLogPath);
  const cloudNow = async (): Promise<Cloud> => ({
    elbs: (await moto.ctl<{ loadBalancers: Elb[] }>('describe-elbs')).loadBalancers.sort((a, b) => a.name.localeCompare(b.name)),
    nlbs: (await moto.ctl<{ loadBalancers: Nlb[] }>('describe-nlbs')).loadBalancers,
    groups: (await moto.ctl<{ groups: Cloud['groups'] }>('security-group-rules', { vpc: seeded.vpc })).groups,
    routes: (await moto.ctl<{ routes: string[] }>('routes', { vpc: seeded.vpc })).routes,
  });

  const upstreamRuns: ManagedProcess[] = [];
  const runUpstream = async () => {
    const [port] = await freePorts(1);
    const logPath = join(dir, `upstream-${upstreamRuns.length + 1}.log`);
    const p = startUpstream(upstreamBin, join(dir, 'upstream-kubeconfig'), cloudConfigPath, ns, port!, logPath);
    upstreamRuns.push(p);
    await waitFor(
      async () => {
        if (p.exit !== undefined) throw new Error(`aws-cloud-controller-manager ${p.exit}; see ${logPath}`);
        return get(`https://127.0.0.1:${port}/healthz`, { insecure: true }).then(
          (r) => r.status === 200,
          () => false,
        );
      },
      { what: 'aws-cloud-controller-manager healthy', timeoutMs: 120_000, log: logPath },
    );
    const holder = await waitFor(async () => ((h) => h.startsWith(`${hostname()}_`) && h)(await leaseHolder(admin, ns)), {
      what: 'aws-cloud-controller-manager holds the Lease',
      timeoutMs: 60_000,
      log: logPath,
    });
    return { process: p, holder, logPath };
  };
  const stopUpstream = async (p: ManagedProcess) => {
    // As `kubectl -n kube-system delete daemonset aws-cloud-controller-manager` does: SIGTERM.
    p.signal('SIGTERM');
    await p.exited;
  };
  t.teardown(async () => {
    for (const p of upstreamRuns) p.signal('SIGKILL');
  });

  // 1. Upstream runs: Nodes initialized, a load balancer for each Service of the table.
  let upstream = await runUpstream();
  for (const [n, i] of seeded.instances.entries())
    await createTestNode(core, i.privateDns, {
      labels: scope.labels,
      ready: true,
      podCidrs: [`10.244.${n + 1}.0/24`],
      taints: [{ key: UNINITIALIZED_TAINT, value: 'true', effect: 'NoSchedule' }],
    });
  for (const i of seeded.instances) await waitNodeInitialized(core, i.privateDns, 'the upstream AWS CCM', 120_000);
  const subnet = async (n: number, az: string) => {
    const name = `${scope.prefix}-lb-${az}`;
    const tags = { Name: name, [`kubernetes.io/cluster/${scope.prefix}-other`]: 'shared' };
    return { id: (await moto.ctl<{ id: string }>('create-subnet', { vpc: seeded.vpc, cidr: `10.49.${n}.0/24`, az, tags })).id, name };
  };
  const prepared: Prepared = {
    custom: (await moto.ctl<{ id: string }>('create-security-group', { vpc: seeded.vpc, name: `${scope.prefix}-custom` })).id,
    extra: (await moto.ctl<{ id: string }>('create-security-group', { vpc: seeded.vpc, name: `${scope.prefix}-extra` })).id,
    certificate: (await moto.ctl<{ arn: string }>('create-certificate', { domain: `${scope.prefix}.migrate.example.com` })).arn,
    bucket: (await moto.ctl('create-bucket', { name: `${scope.prefix}-elb-logs` }), `${scope.prefix}-elb-logs`),
    clusterSubnet: seeded.subnet,
    subnets: [await subnet(2, 'us-east-1b'), await subnet(3, 'us-east-1c')],
    eips: (await moto.ctl<{ addresses: { allocation: string; ip: string }[] }>('allocate-addresses', { count: 2 })).addresses,
  };
  // The AWS Load Balancer Controller's Services (and the NodePort Service behind its Ingress) come first: its
  // instance target groups and its rules on the nodes' group use their node ports, unique in the cluster.
  const ingressBackend = await core.createNamespacedService({
    namespace: ns,
    body: {
      metadata: { name: `${LB_CONTROLLER_INGRESS}-backend`, namespace: ns },
      spec: { type: 'NodePort', ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 as never }] },
    },
  });
  const lbControllerServices = new Map<string, V1Service>();
  for (const row of LB_CONTROLLER_SERVICES) {
    const body = lbService(row.name, ns, [{ port: 80 }], row.loadBalancerClass ? { loadBalancerClass: row.loadBalancerClass } : {}, row.annotations);
    body.metadata!.finalizers = [LB_CONTROLLER_FINALIZER];
    lbControllerServices.set(row.name, await core.createNamespacedService({ namespace: ns, body }));
  }
  // What the controller keeps in the account (its ALB in the cluster's subnet and another zone's), and its Services as it leaves them.
  const lbController = await seedLbController(moto, seeded, {
    cluster: scope.prefix,
    subnets: [prepared.clusterSubnet, prepared.subnets[0]!.id],
    ingress: `${ns}/${LB_CONTROLLER_INGRESS}`,
    ingressNodePort: ingressBackend.spec!.ports![0]!.nodePort!,
    services: LB_CONTROLLER_SERVICES.map((r) => ({
      stack: `${ns}/${r.name}`,
      ...r.nlb,
      nodePort: lbControllerServices.get(r.name)!.spec!.ports![0]!.nodePort,
    })),
  });
  for (const row of LB_CONTROLLER_SERVICES) {
    const dns = lbController.loadBalancers[`${ns}/${row.name}`]!.dns;
    await patchServiceStatus(core, ns, row.name, { status: { loadBalancer: { ingress: [{ hostname: dns }] } } }, 'merge');
  }
  const lbNames = new Map<string, string>();
  for (const row of SERVICES) {
    const created = await core.createNamespacedService({
      namespace: ns,
      body: lbService(
        row.name,
        ns,
        row.ports.map((port) => ({ port })),
        {},
        row.annotations(prepared),
      ),
    });
    lbNames.set(row.name, `a${created.metadata!.uid!.replace(/-/g, '')}`.slice(0, 32));
  }
  const instanceIds = seeded.instances.map((i) => i.id).sort();
  const services = new Map<string, V1Service>();
  for (const row of SERVICES) {
    const lbName = lbNames.get(row.name)!;
    await waitFor(async () => ((ids) => ids?.join() === instanceIds.join() || undefined)(backends(await cloudNow(), row, lbName)), {
      what: `${row.what}: ${lbName} with both instances`,
      timeoutMs: 120_000,
      log: upstream.logPath,
    });
    services.set(
      row.name,
      await waitFor(
        async () =>
          ((s) => ((s.status?.loadBalancer?.ingress ?? []).length > 0 && s.metadata?.finalizers?.includes(LB_FINALIZER) ? s : undefined))(
            await core.readNamespacedService({ name: row.name, namespace: ns }),
          ),
        { what: `${row.name} has its ingress and finalizer`, timeoutMs: 120_000, log: upstream.logPath },
      ),
    );
  }
  // Upstream's route controller routes each Node's pod CIDR to its instance.
  const podRoutes = seeded.instances.map((i, n) => `10.244.${n + 1}.0/24 -> ${i.id}`);
  await waitFor(async () => ((r) => podRoutes.every((want) => r.some((x) => x.includes(` ${want} `))))((await cloudNow()).routes), {
    what: `routes ${podRoutes.join(', ')}`,
    timeoutMs: 120_000,
    log: upstream.logPath,
  });
  // Upstream has done with the controller's Services what it does (its finalizer on the external one).
  for (const row of LB_CONTROLLER_SERVICES)
    await waitFor(
      async () =>
        (await core.readNamespacedService({ name: row.name, namespace: ns })).metadata?.finalizers?.join() === row.upstream.finalizers.join() &&
        (await eventReasons(core, lbControllerServices.get(row.name)!)).join() === row.upstream.events.join(),
      {
        what: `${row.name}: upstream's finalizers ${row.upstream.finalizers.join(', ')} and events ${row.upstream.events.join(', ') || 'none'}`,
        timeoutMs: 60_000,
        log: upstream.logPath,
      },
    );
  const servicesNow = async () =>
    Object.fromEntries(
      await Promise.all(SERVICES.map(async (r) => [r.name, serviceView(await core.readNamespacedService({ name: r.name, namespace: ns }))])),
    );
  const lbControllerNow = async () =>
    Object.fromEntries(
      await Promise.all(
        LB_CONTROLLER_SERVICES.map(async (r) => [
          r.name,
          {
            ...lbControllerServiceView(await core.readNamespacedService({ name: r.name, namespace: ns })),
            events: await eventReasons(core, lbControllerServices.get(r.name)!),
          },
        ]),
      ),
    );
  const isLbControllers = (l: { tags: Record<string, string> }) => l.tags[LB_CONTROLLER_TAG] !== undefined;
  const nodesNow = async () =>
    Object.fromEntries(await Promise.all(seeded.instances.map(async (i) => [i.privateDns, nodeView(await core.readNode({ name: i.privateDns }))])));
  const before = { cloud: await cloudNow(), services: await servicesNow(), nodes: await nodesNow(), lbController: await lbControllerNow() };
  t.deepEqual(
    [...before.cloud.elbs.map((e) => e.name), ...before.cloud.nlbs.filter((l) => !isLbControllers(l)).map((e) => e.name)].sort(),
    [...lbNames.values()].sort(),
    'upstream made one load balancer per Service, named a<uid>',
  );
  for (const row of SERVICES) {
    const lb = [...before.cloud.elbs, ...before.cloud.nlbs].find((l) => l.name === lbNames.get(row.name))!;
    t.is(before.services[row.name]!.ingress[0]?.hostname, lb.dns, `${row.name}: the Service's ingress is the load balancer's DNS name`);
    t.like(lb, row.upstreamMade(prepared), `${row.name}: upstream made ${row.what}`);
  }
  // The controller's load balancers are there, as it tags them; upstream left its Services as the table says.
  const lbControllerNames = new Set(Object.values(lbController.loadBalancers).map((l) => l.name));
  t.deepEqual(
    before.cloud.nlbs
      .filter(isLbControllers)
      .map((l) => `${l.name} ${l.type} ${l.tags[LB_CONTROLLER_TAG]} ${l.tags['ingress.k8s.aws/stack'] ?? l.tags['service.k8s.aws/stack']}`)
      .sort(),
    Object.entries(lbController.loadBalancers)
      .map(([stack, l]) => `${l.name} ${stack.endsWith(`/${LB_CONTROLLER_INGRESS}`) ? 'application' : 'network'} ${scope.prefix} ${stack}`)
      .sort(),
    "the AWS Load Balancer Controller's ALB and NLBs, tagged as it tags them",
  );
  for (const row of LB_CONTROLLER_SERVICES)
    t.like(
      before.lbController[row.name],
      { finalizers: row.upstream.finalizers, events: row.upstream.events, conditions: [] },
      `${row.name}: upstream left ${row.what} as it does`,
    );
  // Upstream acts as its per-controller ServiceAccounts (--use-service-account-credentials=true).
  const upstreamWriters = new Set(
    (await upstreamAudit.events())
      .filter((e) => WRITES.includes(e.verb) && e.user.username.startsWith('system:serviceaccount:kube-system:'))
      .map((e) => e.user.username),
  );
  t.deepEqual(
    [...upstreamWriters].filter((u) => !UPSTREAM_CONTROLLERS.includes(u)),
    [],
    'upstream wrote Services and Nodes only as its per-controller ServiceAccounts',
  );
  t.true(
    upstreamWriters.has(UPSTREAM_CONTROLLERS[0]!) && upstreamWriters.has(UPSTREAM_CONTROLLERS[1]!),
    `upstream wrote as node-controller and service-controller (${[...upstreamWriters].join(', ')})`,
  );
  const afterUpstream = await motoJournal(journal);
  t.deepEqual(
    // Not the test's own (moto-aws.py signs as MOTO_CLIENT_ENV's key): the LB controller's ALB and NLBs.
    afterUpstream.filter((c) => c.action === 'CreateLoadBalancer' && c.caller !== MOTO_CLIENT_ENV.AWS_ACCESS_KEY_ID).map((c) => c.caller),
    SERVICES.map(() => UPSTREAM_KEY),
  );

  // 2. Ours starts with the shipped arguments while upstream holds the Lease: it waits.
  // With routes on, as deploy/base/deployment.yaml tells an operator to turn them on (later arguments win).
  const rendered = await renderProvider('aws');
  const deployment = rendered.find((o): o is V1Deployment => o.kind === 'Deployment')!;
  deployment.spec!.template.spec!.containers[0]!.args!.push('--configure-cloud-routes=true', `--cluster-cidr=${CLUSTER_CIDR}`);
  const audit = await auditLogFromNow(cp.auditLogPath);
  const hostMain = join(REPO, 'dist', 'host', 'main.js');
  const pod: Pod = await runPod(t, rendered, admin, {
    images: {
      'ghcr.io/grpc-ccm/cloud-controller-manager': { entrypoint: hostMain, node: true, host: true },
      'ghcr.io/grpc-ccm/ccm-provider-aws': { entrypoint: providerBin, node: false, host: false },
    },
    namespace: ns,
    nodeSelector: scope.selector,
    provisionerName: `${scope.prefix}.migrate.test`,
    secretFiles: { 'cloud.conf': cloudConf },
    extraEnv: { provider: awsEnv(OURS_KEY) },
  });
  // The per-controller flavour's RBAC too (deploy/components/per-controller-rbac: its ServiceAccounts have upstream's names), applied as an operator might have tried it.
  await applyObjects(
    admin,
    (await renderProvider('aws', true)).filter((o) => RBAC_KINDS.includes(o.kind!)),
  );
  await waitFor(
    async () => (await readFile(pod.host.logPath, 'utf8')).split('\n').some((l) => l.includes('new leader elected') && l.includes(upstream.holder)),
    { what: 'ours sees upstream holding the Lease', timeoutMs: 60_000, log: pod.host.logPath },
  );
  // And keeps waiting while upstream renews it.
  const leases = admin.makeApiClient(CoordinationV1Api);
  const seen = (await leases.readNamespacedLease({ name: LEASE, namespace: ns })).spec?.renewTime?.valueOf();
  await waitFor(async () => (await leases.readNamespacedLease({ name: LEASE, namespace: ns })).spec?.renewTime?.valueOf() !== seen, {
    what: 'upstream renews the Lease once more while ours runs',
    timeoutMs: 30_000,
  });
  const whileWaiting = await motoJournal(journal);
  t.deepEqual(writesBy(whileWaiting, OURS_KEY), [], 'ours made no AWS write while upstream held the Lease');
  t.deepEqual(oursWrites(await audit.events(), pod), [], 'ours wrote no Service and no Node while upstream held the Lease');
  t.is(await leaseHolder(admin, ns), upstream.holder, 'upstream still holds the Lease');

  // route_controller_route_sync_total of ours by outcome, read from its /metrics as a ServiceAccount allowed to.
  await applyObjects(admin, [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'metrics-reader', namespace: ns } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: `${ns}:metrics-reader` },
      rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
    } as KubernetesObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `${ns}:metrics-reader` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${ns}:metrics-reader` },
      subjects: [{ kind: 'ServiceAccount', name: 'metrics-reader', namespace: ns }],
    } as KubernetesObject,
  ]);
  const metricsToken = (await serviceAccountKubeConfig(admin, { namespace: ns, name: 'metrics-reader' })).getCurrentUser()!.token!;
  const metricsOf = async (p: Pod): Promise<string> => {
    const r = await get(`https://127.0.0.1:${p.ports.get(10258)}/metrics`, { insecure: true, token: metricsToken }).catch(() => undefined);
    return r?.status === 200 ? r.body : '';
  };
  const routeSyncsOf = async (p: Pod): Promise<Record<string, number>> => {
    const out: Record<string, number> = {};
    for (const m of (await metricsOf(p)).matchAll(/^route_controller_route_sync_total\{[^}]*outcome="(\w+)"[^}]*\} (\d+)/gm))
      out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[2]);
    return out;
  };

  // 3. The operator stops upstream; ours takes the Lease and adopts every load balancer.
  const ensuredCounts = async () =>
    Object.fromEntries(await Promise.all(SERVICES.map(async (r) => [r.name, await eventCount(core, services.get(r.name)!, 'EnsuredLoadBalancer')])));
  const ensuredAgain = (since: Record<string, number>, who: string, log: string) =>
    Promise.all(
      SERVICES.map((r) =>
        waitFor(async () => (await eventCount(core, services.get(r.name)!, 'EnsuredLoadBalancer')) > since[r.name]!, {
          what: `${who} ensured ${r.name}`,
          timeoutMs: 120_000,
          log,
        }),
      ),
    );
  const ensuredBefore = await ensuredCounts();
  // The controller's Services that upstream announces (the external one): ours announces them too, then leaves them to the controller.
  const announced = LB_CONTROLLER_SERVICES.filter((r) => r.upstream.events.includes('Normal EnsuringLoadBalancer'));
  const announcedCounts = async () =>
    Object.fromEntries(
      await Promise.all(announced.map(async (r) => [r.name, await eventCount(core, lbControllerServices.get(r.name)!, 'EnsuringLoadBalancer')])),
    );
  const announcedBefore = await announcedCounts();
  await stopUpstream(upstream.process);
  const takeoverFrom = (await motoJournal(journal)).length;
  const ours = await waitFor(async () => ((h) => h !== '' && h !== upstream.holder && h)(await leaseHolder(admin, ns)), {
    what: 'ours takes the Lease',
    timeoutMs: 90_000,
    log: pod.host.logPath,
  });
  await ensuredAgain(ensuredBefore, 'ours', pod.host.logPath);
  for (const r of announced)
    await waitFor(async () => (await eventCount(core, lbControllerServices.get(r.name)!, 'EnsuringLoadBalancer')) > announcedBefore[r.name]!, {
      what: `ours announced ${r.name} as upstream does`,
      timeoutMs: 60_000,
      log: pod.host.logPath,
    });
  // And its route controller has compared the routes with the Nodes (a reconcile that found nothing to do).
  const routeSyncs = await waitFor(async () => ((m) => (m.noop ? m : undefined))(await routeSyncsOf(pod)), {
    what: "ours' route controller reconciled",
    timeoutMs: 90_000,
    log: pod.host.logPath,
  });
  t.is(routeSyncs.changed ?? 0, 0, `ours' route reconciles changed nothing (${JSON.stringify(routeSyncs)})`);
  const adopted = { cloud: await cloudNow(), services: await servicesNow(), nodes: await nodesNow(), lbController: await lbControllerNow() };
  const takeover = (await motoJournal(journal)).slice(takeoverFrom);
  t.deepEqual(
    adopted,
    before,
    "after the switch: the same load balancers (listeners, instances or targets, health checks, attributes, security groups and their rules, tags), routes, Service status, finalizers and Nodes; the LB controller's load balancers, groups and Services (not one write: same resourceVersion; no event but upstream's reasons)",
  );
  t.deepEqual(
    takeover.filter((c) => /^(Create|Delete|Replace)(LoadBalancer|TargetGroup|Listener|SecurityGroup|Route)$/.test(c.action)),
    [],
    'ours created, replaced and deleted no load balancer, target group, listener, security group or route',
  );
  const oursTakeoverWrites = writesBy(takeover, OURS_KEY);
  const k8sEvents = await audit.events();
  const k8sWrites = oursWrites(k8sEvents, pod);
  t.true(
    k8sEvents.some((e) => credentialIdOf(e) === pod.identities.get('provider')?.credentialId),
    "the audit log tells ours' requests by their credentials (the provider's are all logged)",
  );
  t.deepEqual(
    k8sWrites.filter((w) => w.startsWith('delete') || w.includes(' nodes')),
    [],
    'ours deleted nothing and wrote no Node',
  );
  t.deepEqual(
    k8sWrites.filter((w) => LB_CONTROLLER_SERVICES.some((r) => w.endsWith(` services ${r.name}`) || w.endsWith(`/status ${r.name}`))),
    [],
    "ours wrote nothing to the LB controller's Services",
  );
  // The orphan sweep does not run for the AWS provider (the bridge lists no load balancers): it counted nothing, the controller's included.
  t.deepEqual(
    (await metricsOf(pod)).split('\n').filter((l) => /^ccm_orphan_load_balancers_total\{[^}]*\} [1-9]/.test(l)),
    [],
    'the orphan sweep found no orphan',
  );
  // An external Service made and deleted while ours leads: ours treats it as upstream does (its finalizer,
  // then ImplementedElsewhere), and its deletion is not held by that finalizer: removed with no AWS call.
  const lateFrom = (await motoJournal(journal)).length;
  const lateBody = lbService('lbc-late', ns, [{ port: 80 }], {}, LB_CONTROLLER_SERVICES.find((r) => r.name === 'lbc-external')!.annotations);
  lateBody.metadata!.finalizers = [LB_CONTROLLER_FINALIZER];
  const late = await core.createNamespacedService({ namespace: ns, body: lateBody });
  await waitFor(async () => (await core.readNamespacedService({ name: 'lbc-late', namespace: ns })).metadata?.finalizers?.includes(LB_FINALIZER), {
    what: "ours put upstream's finalizer on lbc-late, as upstream does",
    timeoutMs: 60_000,
    log: pod.host.logPath,
  });
  await core.deleteNamespacedService({ name: 'lbc-late', namespace: ns });
  // The LB controller removes its own finalizer once its NLB is gone (here at once: it made none); retried on a conflict with ours.
  await waitFor(
    async () => {
      const now = await core.readNamespacedService({ name: 'lbc-late', namespace: ns });
      const rest = (now.metadata?.finalizers ?? []).filter((f) => f !== LB_CONTROLLER_FINALIZER);
      return core
        .patchNamespacedService({
          name: 'lbc-late',
          namespace: ns,
          body: [
            { op: 'test', path: '/metadata/resourceVersion', value: now.metadata!.resourceVersion },
            { op: 'replace', path: '/metadata/finalizers', value: rest },
          ],
        })
        .then(
          () => true,
          () => false,
        );
    },
    { what: "the LB controller's finalizer off lbc-late", timeoutMs: 30_000 },
  );
  await waitFor(async () => (await core.listNamespacedService({ namespace: ns, fieldSelector: 'metadata.name=lbc-late' })).items.length === 0, {
    what: 'lbc-late deleted (ours removed its finalizer)',
    timeoutMs: 60_000,
    log: pod.host.logPath,
  });
  t.deepEqual(
    (await motoJournal(journal))
      .slice(lateFrom)
      .filter((c) => c.caller === OURS_KEY && mutating(c) && c.name === `a${late.metadata!.uid!.replace(/-/g, '')}`.slice(0, 32)),
    [],
    'ours made no AWS write for the external Service it saw made and deleted',
  );
  t.deepEqual(
    (await eventReasons(core, late)).filter((r) => r.startsWith('Warning')),
    [],
    'and recorded no Warning on it',
  );

  // 4. Rollback: ours stopped (it releases the Lease), upstream started again.
  t.is(await pod.host.stop(), 0, 'ours stops cleanly');
  for (const c of pod.others) await c.stop();
  const rollbackFrom = (await motoJournal(journal)).length;
  const ensuredByOurs = await ensuredCounts();
  upstream = await runUpstream();
  await ensuredAgain(ensuredByOurs, 'upstream', upstream.logPath);
  const rolledBack = { cloud: await cloudNow(), services: await servicesNow(), nodes: await nodesNow(), lbController: await lbControllerNow() };
  const rollback = (await motoJournal(journal)).slice(rollbackFrom);
  t.deepEqual(rolledBack, before, 'after the rollback: nothing lost');
  t.deepEqual(
    rollback.filter((c) => /^(Create|Delete|Replace)(LoadBalancer|TargetGroup|Listener|SecurityGroup|Route)$/.test(c.action)),
    [],
    'upstream created, replaced and deleted no load balancer, target group, listener, security group or route on the rollback',
  );
  // Ours, taking over the load balancers, writes to AWS exactly what upstream writes when it restarts onto them.
  t.deepEqual(oursTakeoverWrites, writesBy(rollback, UPSTREAM_KEY), "ours' AWS writes on the switch are upstream's on a restart");
  // Load balancer by load balancer: only the writes upstream's code repeats on every sync, by either side.
  for (const row of SERVICES) {
    const lbName = lbNames.get(row.name)!;
    const want = [...row.rewrites].sort();
    t.deepEqual(writesFor(takeover, OURS_KEY, lbName), want, `${row.name}: ours' AWS writes for ${lbName} on the switch`);
    t.deepEqual(writesFor(rollback, UPSTREAM_KEY, lbName), want, `${row.name}: upstream's AWS writes for ${lbName} on the rollback`);
  }
  // Upstream, with its own RBAC and ours applied over it, never lacked a right: no 403 in any of its runs.
  for (const n of upstreamRuns.keys()) {
    const logPath = join(dir, `upstream-${n + 1}.log`);
    const log = await readFile(logPath, 'utf8');
    t.deepEqual(
      log.split('\n').filter((l) => /forbidden/i.test(l)),
      [],
      `no 403 in ${logPath}`,
    );
  }
  const all = await motoJournal(journal);
  const lbControllerGroups = new Set(lbController.groups);
  t.deepEqual(
    all
      .filter(
        (c) =>
          (c.caller === UPSTREAM_KEY || c.caller === OURS_KEY) &&
          mutating(c) &&
          (lbControllerNames.has(c.name) || c.groups.some((g) => lbControllerGroups.has(g))),
      )
      .map((c) => `${c.caller} ${c.action} ${c.name} ${c.groups.join(',')}`),
    [],
    "neither side ever wrote to the LB controller's load balancers, listeners, target groups or security groups",
  );
  t.deepEqual(
    all.filter((c) => /^Delete/.test(c.action)),
    [],
    'nothing was ever deleted',
  );
  t.log(
    `ours took the Lease as ${ours}; its Service/Node writes: ${k8sWrites.join(', ') || 'none'}; its AWS writes: ${oursTakeoverWrites.join(', ') || 'none'}`,
  );
  await stopUpstream(upstream.process);
});
