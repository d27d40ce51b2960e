/**
 * How the suite's Go builds run (the control plane, the providers, kustomize,
 * promtool, the upstream CCM; the provider image's RUN line builds the same
 * way): every one with the one Go build cache and module cache of the
 * machine (`go env GOCACHE GOMODCACHE`, or what the environment names, so a
 * cold run can be measured with empty ones) and the same settings (static,
 * paths trimmed), so a package that two builds share at the same version
 * (client-go, apimachinery, grpc, the standard library) is compiled once.
 *
 * CCM_BUILD_NICE=N runs the builds under `nice -n N`: the test runner sets it
 * (default 10) so builds that run beside tests leave the CPU to the tests.
 */
import { execa } from 'execa';

/** Settings every Go build shares (part of each build's cache key). */
export const GO_BUILD = { env: { CGO_ENABLED: '0', GOTOOLCHAIN: 'local' }, flags: ['-trimpath'] } as const;

/** `cmd args` as spawned, under `nice -n $CCM_BUILD_NICE` when that is set. */
export function niced(cmd: string, args: readonly string[]): [string, string[]] {
  const n = process.env.CCM_BUILD_NICE;
  return n && /^\d+$/.test(n) && n !== '0' ? ['nice', ['-n', n, cmd, ...args]] : [cmd, [...args]];
}

/**
 * Downloads the modules the packages `pkgs` of the module in `cwd` import
 * (`go list -deps`: exactly what `go build` of them would fetch, unlike `go
 * mod download`, which fetches the whole graph), without compiling. The
 * runner starts these for every pending build at once, so the downloads
 * overlap with the compiles; idempotent; an error is left to the build.
 */
export async function goFetch(cwd: string, pkgs: readonly string[], tags: readonly string[] = []): Promise<void> {
  await execa('go', ['list', '-e', '-deps', ...tags, '-f', '{{.ImportPath}}', ...pkgs], {
    cwd,
    env: GO_BUILD.env,
    reject: false,
    stdout: 'ignore',
    timeout: 30 * 60_000,
  });
}
