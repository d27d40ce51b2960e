/**
 * The upstream AWS cloud-controller-manager itself: k8s.io/cloud-provider-aws's
 * own cmd/aws-cloud-controller-manager (its main, its tagging controller), not
 * k8s.io/cloud-provider's app with the provider linked in (that is
 * plugins/aws-bridge/cmd/upstream-ccm). The version and every dependency are
 * pinned by tools/aws-cloud-controller-manager/go.mod (a `tool` line), kept
 * equal to plugins/aws-bridge's so the two builds share the Go build cache.
 * Built from the Go module proxy on first use into
 * `${XDG_CACHE_HOME:-~/.cache}/ccm-host/aws-cloud-controller-manager-<hash>/`,
 * the hash covering that go.mod and go.sum, the build flags and the Go
 * version; the build runs under CCM_BUILD_NICE like the others and prints its time.
 * test/integration/deploy/migrate-aws.test.ts migrates from it to the host and back.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { buildOnce } from './build-once.js';
import { goFetch, niced } from './go-build.js';
import { BRIDGED_BUILD, hashFiles, REPO } from './providers.js';

/** The module that pins the upstream AWS CCM (go.mod's `tool` line) and every dependency (go.sum). */
export const AWS_CCM_MODULE = join(REPO, 'tools', 'aws-cloud-controller-manager');
const PACKAGE = 'k8s.io/cloud-provider-aws/cmd/aws-cloud-controller-manager';
/** As the bridged AWS provider is built (static, paths trimmed), so the compiled packages are shared. */
const BUILD = { flags: [...BRIDGED_BUILD.flags], env: { ...BRIDGED_BUILD.env, GOTOOLCHAIN: 'local' } } as const;

let binary: Promise<string> | undefined;

/** The cache directory, keyed by the module's go.mod and go.sum, the build settings and the Go version. */
export async function awsCloudControllerManagerDir(): Promise<string> {
  const goVersion = (await execa('go', ['env', 'GOVERSION'])).stdout.trim();
  const key = await hashFiles(AWS_CCM_MODULE, ['go.mod', 'go.sum'], `${goVersion}\0${JSON.stringify(BUILD)}\0${PACKAGE}`);
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'ccm-host', `aws-cloud-controller-manager-${key}`);
}

/** Downloads the modules it needs without compiling (the runner starts this beside other builds). */
export function fetchAwsCloudControllerManager(): Promise<void> {
  return goFetch(AWS_CCM_MODULE, [PACKAGE]);
}

/** Path of aws-cloud-controller-manager, built on first use; `say` gets a line when a build starts and when it is done (with its time). */
export function awsCloudControllerManager(say: (line: string) => void = () => undefined): Promise<string> {
  return (binary ??= (async () => {
    const dir = await awsCloudControllerManagerDir();
    await buildOnce(dir, async (tmp) => {
      const t0 = Date.now();
      say(`building ${PACKAGE} (tools/aws-cloud-controller-manager/go.mod) into ${dir}`);
      const tick = setInterval(() => say(`still building aws-cloud-controller-manager (${Math.round((Date.now() - t0) / 1000)} s elapsed)`), 30_000);
      try {
        const r = await execa(...niced('go', ['build', ...BUILD.flags, '-o', join(tmp, 'aws-cloud-controller-manager'), PACKAGE]), {
          cwd: AWS_CCM_MODULE,
          env: BUILD.env,
          reject: false,
          timeout: 45 * 60_000,
        });
        if (r.failed)
          throw new Error(`building aws-cloud-controller-manager failed (Go and the Go module proxy are needed once): ${r.stderr || r.message}`);
      } finally {
        clearInterval(tick);
      }
      say(`aws-cloud-controller-manager built in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    });
    return join(dir, 'aws-cloud-controller-manager');
  })());
}
