/**
 * promtool, Prometheus's own rule checker (`promtool check rules`, `promtool
 * test rules`), at the version tools/promtool/go.mod pins: built from Go
 * modules on first use into
 * `${XDG_CACHE_HOME:-~/.cache}/ccm-host/promtool-<hash>/promtool`, the hash
 * covering that go.mod and go.sum, the build flags and the Go version, once
 * per machine. Built without Prometheus's service discovery (-tags
 * remove_all_sd): the rule commands do not need it, and it is most of the
 * build.
 */
import { join } from 'node:path';
import { homedir } from 'node:os';
import { execa } from 'execa';
import { buildOnce } from './build-once.js';
import { goFetch, niced } from './go-build.js';
import { goVersion, hashFiles, REPO } from './providers.js';

/** The module that pins promtool's version (go.mod's `tool` line) and every dependency (go.sum). */
export const PROMTOOL_MODULE = join(REPO, 'tools', 'promtool');

const BUILD = { flags: ['-trimpath', '-tags', 'remove_all_sd', '-ldflags=-s -w'], env: { CGO_ENABLED: '0' } } as const;
const PACKAGE = 'github.com/prometheus/prometheus/cmd/promtool';

/** The cache directory of promtool: tools/promtool's go.mod and go.sum, the build flags and the Go version. */
export async function promtoolDir(): Promise<string> {
  const key = await hashFiles(PROMTOOL_MODULE, ['go.mod', 'go.sum'], `${await goVersion()}\0${JSON.stringify(BUILD)}`);
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'ccm-host', `promtool-${key}`);
}

/** Downloads the modules the promtool build needs, compiling nothing (goFetch). */
export async function fetchPromtool(): Promise<void> {
  await goFetch(PROMTOOL_MODULE, [PACKAGE], ['-tags', 'remove_all_sd']);
}

let binary: Promise<string> | undefined;

/** Path of promtool, built on first use; `say` gets a line when a build starts and when it is done (with its time). */
export function promtoolBinary(say: (line: string) => void = () => undefined): Promise<string> {
  return (binary ??= (async () => {
    const dir = await promtoolDir();
    await buildOnce(dir, async (tmp) => {
      const t0 = Date.now();
      say(`building promtool (tools/promtool/go.mod) into ${dir}`);
      const r = await execa(...niced('go', ['build', ...BUILD.flags, '-o', join(tmp, 'promtool'), PACKAGE]), {
        cwd: PROMTOOL_MODULE,
        env: { ...BUILD.env, GOTOOLCHAIN: 'local' },
        reject: false,
        timeout: 30 * 60_000,
      });
      if (r.failed) throw new Error(`building promtool failed (Go and the Go module proxy are needed once): ${r.stderr || r.message}`);
      say(`promtool built in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    });
    return join(dir, 'promtool');
  })());
}
