/**
 * Volumes by StorageClass provisioner (issue 31, item 4): which of a host's
 * volume providers serves a claim, PersistentVolume or VolumeAttachment, by
 * its provisioner (CSI driver) name.
 *
 * Each volume provider declares the names it serves
 * (GetPluginCapabilitiesResponse.volume_provisioners). A provider that
 * declares nothing serves one name, as before the declaration:
 * --volume-provisioner-name, else its GetPluginInfo name. The flag replaces
 * the declaration of the host's one volume provider; with two or more it
 * would be ambiguous, so the host refuses it.
 *
 * The rules over a host's volume providers (volumeProvisionerProblems; the
 * host refuses to start on any): every name a valid CSI driver name, no name
 * served twice (by one provider or by two). Then each name has at most one
 * provider, and an object of a name no provider serves is left alone.
 */
import { driverNameProblem } from './config/volumes.js';

/** A volume provider as the resolver sees it: its name in the host and the provisioner names it serves. */
export interface VolumeProvisionerProvider {
  name: string;
  provisioners: readonly string[];
}

/** Problems of one provider's own declaration (invalid or repeated names), each a line. */
export function volumeDeclarationProblems(provider: string, provisioners: readonly string[]): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const name of provisioners) {
    const p = driverNameProblem(name);
    if (p) problems.push(`provider ${provider}: volume provisioner ${p}`);
    if (seen.has(name)) problems.push(`provider ${provider} declares volume provisioner ${JSON.stringify(name)} twice`);
    seen.add(name);
  }
  return problems;
}

/**
 * Every problem of a host's volume providers' provisioner names at once
 * (empty = fine): each provider's own (volumeDeclarationProblems), and a name
 * two providers serve. Pass only providers that serve volumes (SERVICE_VOLUMES).
 */
export function volumeProvisionerProblems(providers: readonly VolumeProvisionerProvider[]): string[] {
  const problems: string[] = [];
  const byName = new Map<string, string[]>();
  for (const p of providers) {
    problems.push(...volumeDeclarationProblems(p.name, p.provisioners));
    for (const n of new Set(p.provisioners)) byName.set(n, [...(byName.get(n) ?? []), p.name]);
  }
  for (const [n, who] of byName)
    if (who.length > 1)
      problems.push(
        `volume provisioner ${JSON.stringify(n)} is served by several providers (${who.join(', ')}); give each provisioner one provider: declare volume_provisioners in each (the local cloud: LOCALCLOUD_VOLUME_PROVISIONERS)`,
      );
  return problems;
}

/**
 * The provisioner names a volume provider serves: `override`
 * (--volume-provisioner-name, one volume provider only) when set, else its
 * declaration, else `fallback` (its GetPluginInfo name), as before the
 * declaration existed.
 */
export function servedProvisioners(declared: readonly string[] | undefined, override: string, fallback: string): string[] {
  if (override !== '') return [override];
  if (declared && declared.length > 0) return [...declared];
  return [fallback];
}
