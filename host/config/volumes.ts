/**
 * Flags of the volume controllers and the PersistentVolume label webhook
 * (host/controllers/volume/), compiled into `HostConfig.volumes`.
 */
import path from 'node:path';
import type { SecureVersion } from 'node:tls';
import type { HostOptionsWithDefaults } from './options.js';
import { sniCertKeys, tlsCiphers, tlsCurves, tlsMinVersion, type SniCertKey } from './serving.js';
import type { Problems } from './validate.js';

/** A CSI driver name: a DNS subdomain of at most 63 characters (CSIDriver validation). */
const DRIVER_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

export interface VolumeConfig {
  /** `--volume-provisioner-name`; '' = the plugin's name (GetPluginInfo), resolved when controllers start. */
  readonly provisionerName: string;
  /** `--concurrent-volume-syncs`: workers of each volume controller. */
  readonly concurrentSyncs: number;
  /** `--volume-attach-reconcile-period`: how often attachments are compared with ListVolumes. */
  readonly attachReconcilePeriodMs: number;
  /** `--webhook-secure-port`; 0 = no webhook server. */
  readonly webhookPort: number;
  /** `--webhook-bind-address`. */
  readonly webhookBindAddress: string;
  /** `--webhook-tls-cert-file` / `--webhook-tls-private-key-file`; undefined = a generated self-signed certificate. */
  readonly webhookTls: { readonly certFile: string; readonly keyFile: string } | undefined;
  /** `--webhook-cert-dir`: where a generated certificate is written (for the caBundle); '' = memory only. */
  readonly webhookCertDir: string;
  /** `--webhook-tls-min-version`, as Node names it; undefined = Node's default (TLS 1.2). */
  readonly webhookTlsMinVersion: SecureVersion | undefined;
  /** `--webhook-tls-cipher-suites` as an OpenSSL cipher list; undefined = Node's defaults. */
  readonly webhookTlsCiphers: string | undefined;
  /** `--webhook-tls-curve-preferences` as an OpenSSL group list; undefined = Node's defaults. */
  readonly webhookTlsCurves: string | undefined;
  /** `--webhook-tls-sni-cert-key`, in the order given. */
  readonly webhookSniCerts: readonly SniCertKey[];
}

/** A CSI driver name problem, or undefined. */
export function driverNameProblem(name: string): string | undefined {
  if (name.length > 63 || !DRIVER_NAME.test(name)) {
    return `${JSON.stringify(name)} is not a valid CSI driver name: use at most 63 lowercase letters, digits, "-" and ".", starting and ending alphanumeric`;
  }
  return undefined;
}

export function compileVolumeConfig(o: HostOptionsWithDefaults, p: Problems): VolumeConfig {
  const provisionerName = o.volumeProvisionerName ?? '';
  if (provisionerName !== '') {
    const problem = driverNameProblem(provisionerName);
    if (problem) p.add(`--volume-provisioner-name: ${problem}`);
  }
  let webhookTls: VolumeConfig['webhookTls'];
  const cert = o.webhookTlsCertFile;
  const key = o.webhookTlsPrivateKeyFile;
  if (cert !== undefined || key !== undefined) {
    if (cert === undefined || key === undefined) {
      p.add('--webhook-tls-cert-file and --webhook-tls-private-key-file go together: pass both, or neither for a generated self-signed certificate');
    } else {
      p.readableFile('webhook-tls-cert-file', cert);
      p.readableFile('webhook-tls-private-key-file', key);
      webhookTls = { certFile: path.resolve(cert), keyFile: path.resolve(key) };
    }
  }
  return {
    provisionerName,
    concurrentSyncs: p.int('concurrent-volume-syncs', o.concurrentVolumeSyncs, { min: 1, want: 'an integer greater than 0' }),
    attachReconcilePeriodMs: p.duration('volume-attach-reconcile-period', o.volumeAttachReconcilePeriod, { positive: true }),
    webhookPort: p.int('webhook-secure-port', o.webhookSecurePort, {
      min: 0,
      max: 65535,
      want: 'a port from 1 to 65535, or 0 to disable the webhook server',
    }),
    webhookBindAddress: o.webhookBindAddress,
    webhookTls,
    webhookCertDir: o.webhookCertDir ? path.resolve(o.webhookCertDir) : '',
    webhookTlsMinVersion: tlsMinVersion('webhook-tls-min-version', o.webhookTlsMinVersion, p),
    webhookTlsCiphers: tlsCiphers('webhook-tls-cipher-suites', o.webhookTlsCipherSuites, p),
    webhookTlsCurves: tlsCurves('webhook-tls-curve-preferences', o.webhookTlsCurvePreferences, p),
    webhookSniCerts: sniCertKeys('webhook-tls-sni-cert-key', o.webhookTlsSniCertKey, p),
  };
}
