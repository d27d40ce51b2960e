#!/usr/bin/env node
/**
 * ccm-provider-conformance: checks that a provider plugin, in any language,
 * follows the ccm.provider.v1 protocol (docs/protocol.md), as a black box.
 *
 *   ccm-provider-conformance --plugin-path ./ccm-provider-x [--plugin-env K=V]...
 *   ccm-provider-conformance --plugin-endpoint unix:///run/ccm/provider.sock
 *     [--cloud-config FILE] [--test-hook-command CMD] [--junit FILE] [--focus REGEX]
 *   ccm-provider-conformance --plugin-path ./ccm-provider-x --render-schema FILE|-
 *
 * Prints one line per check (PASS / FAIL / SKIP) and a summary; exits 1 when
 * a check failed, 2 on bad arguments. Checks of capabilities the provider
 * does not declare are skipped, not failed.
 *
 * --render-schema runs no check: it writes the provider's annotation
 * reference (Markdown, from GetProviderSchema; conformance/schema-doc.ts) and
 * exits 1 when the provider publishes no schema the host can use.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { unixSocketPath } from '../sdk/protocol.js';
import type { TargetSpec } from './kit.js';
import { formatResult, junitXml, summaryLine, counts } from './report.js';
import { runConformance } from './run.js';
import { renderSchemaCommand, SchemaUnavailable } from './schema-doc.js';

function collect(v: string, prev: string[]): string[] {
  return [...prev, v];
}

function duration(v: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(v.trim());
  if (!m) throw new InvalidArgumentError(`${JSON.stringify(v)} is not a duration like 500ms, 10s or 1m`);
  return Math.round(Number(m[1]) * ({ ms: 1, s: 1000, m: 60_000 }[m[2] ?? 's'] ?? 1000));
}

const program = new Command('ccm-provider-conformance')
  .description('Conformance checks for ccm.provider.v1 provider plugins (any language).')
  .option('--plugin-path <path>', 'provider executable (or .js entry point) to start the way the host does (exec mode)')
  .option('--plugin-endpoint <endpoint>', 'unix:///path.sock of an already running provider (sidecar mode)')
  .option('--plugin-env <NAME=VALUE>', 'extra environment for the provider (exec mode), repeatable', collect, [])
  .option('--cloud-config <file>', 'file whose bytes are handed to Configure')
  .option('--bad-cloud-config <file>', 'file whose bytes Configure must refuse with INVALID_ARGUMENT (checked before --cloud-config is sent)')
  .option(
    '--test-hook-command <command>',
    "command that creates/deletes test instances (see docs/protocol.md); default: the provider's TestHooksService",
  )
  .option('--junit <file>', 'also write the results as JUnit XML')
  .option(
    '--render-schema <file>',
    "run no check: write the provider's annotation reference (Markdown, from GetProviderSchema) to FILE (- for stdout)",
  )
  .option('--focus <regex>', 'run only checks whose id matches')
  .option('--start-timeout <duration>', 'bound for the handshake and for Probe to report ready', duration, 60_000)
  .option('--shutdown-grace <duration>', 'grace period sent with Shutdown', duration, 2_000)
  .showSuggestionAfterError();

async function main(): Promise<number> {
  program.parse();
  const o = program.opts<{
    pluginPath?: string;
    pluginEndpoint?: string;
    pluginEnv: string[];
    cloudConfig?: string;
    badCloudConfig?: string;
    testHookCommand?: string;
    junit?: string;
    renderSchema?: string;
    focus?: string;
    startTimeout: number;
    shutdownGrace: number;
  }>();
  const problems: string[] = [];
  if (!o.pluginPath === !o.pluginEndpoint) problems.push('pass exactly one of --plugin-path and --plugin-endpoint');
  if (o.pluginEndpoint && !unixSocketPath(o.pluginEndpoint))
    problems.push(`--plugin-endpoint ${JSON.stringify(o.pluginEndpoint)} is not unix:///absolute/path`);
  for (const e of o.pluginEnv) if (!/^[A-Za-z_][A-Za-z0-9_]*=/.test(e)) problems.push(`--plugin-env ${JSON.stringify(e)} is not NAME=VALUE`);
  let focus: RegExp | undefined;
  try {
    focus = o.focus ? new RegExp(o.focus) : undefined;
  } catch (err) {
    problems.push(`--focus: ${(err as Error).message}`);
  }
  let cloudConfig = Buffer.alloc(0);
  if (o.cloudConfig)
    cloudConfig = await readFile(o.cloudConfig).catch((err: Error) => (problems.push(`--cloud-config: ${err.message}`), Buffer.alloc(0)));
  let badCloudConfig: Buffer | undefined;
  if (o.badCloudConfig)
    badCloudConfig = await readFile(o.badCloudConfig).catch((err: Error) => (problems.push(`--bad-cloud-config: ${err.message}`), undefined));
  if (problems.length) {
    for (const p of problems) process.stderr.write(`ccm-provider-conformance: ${p}\n`);
    return 2;
  }
  const target: TargetSpec = o.pluginPath
    ? { kind: 'exec', path: resolve(o.pluginPath), env: o.pluginEnv }
    : { kind: 'endpoint', endpoint: o.pluginEndpoint! };
  if (o.renderSchema !== undefined) {
    try {
      await renderSchemaCommand(target, o.startTimeout, o.renderSchema);
      return 0;
    } catch (err) {
      if (!(err instanceof SchemaUnavailable)) throw err;
      process.stderr.write(`ccm-provider-conformance: ${err.message}\n`);
      return 1;
    }
  }
  process.stdout.write(`ccm-provider-conformance: ${target.kind === 'exec' ? target.path : target.endpoint}\n`);
  const results = await runConformance({
    target,
    cloudConfig,
    badCloudConfig,
    hookCommand: o.testHookCommand,
    startTimeoutMs: o.startTimeout,
    shutdownGraceMs: o.shutdownGrace,
    focus,
    onResult: (r) => process.stdout.write(formatResult(r) + '\n'),
  });
  if (o.junit) await writeFile(o.junit, junitXml('ccm-provider-conformance', results));
  process.stdout.write(`\n${summaryLine(results)}\n`);
  return counts(results).fail > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`ccm-provider-conformance: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  },
);
