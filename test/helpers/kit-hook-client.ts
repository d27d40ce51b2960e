/**
 * The conformance kit's test hook command (--test-hook-command,
 * conformance/hooks.ts) for a hook served by the test process itself
 * (serveTestHook in test/helpers/real-provider-kit.ts):
 *
 *   node kit-hook-client.js URL create-instance NAME   prints the instance's providerID
 *   node kit-hook-client.js URL delete-instance NAME   exit 0, also when there is none
 *   node kit-hook-client.js URL throttle ...           exit 3: no stand-in here throttles
 */
const HOOK_UNSUPPORTED_EXIT = 3;

async function main(): Promise<number> {
  const [url, verb, name, ...rest] = process.argv.slice(2);
  if (!url || !name || rest.length > 0 || (verb !== 'create-instance' && verb !== 'delete-instance')) return HOOK_UNSUPPORTED_EXIT;
  const res = await fetch(`${url}/${verb}/${encodeURIComponent(name)}`, { method: 'POST', signal: AbortSignal.timeout(50_000) });
  const body = (await res.json()) as { providerId?: string; error?: string };
  if (!res.ok) {
    process.stderr.write(`test hook: ${verb} ${name}: HTTP ${res.status}: ${body.error ?? ''}\n`);
    return 1;
  }
  if (body.providerId) process.stdout.write(`${body.providerId}\n`);
  return 0;
}

process.exitCode = await main().catch((err: Error) => {
  process.stderr.write(`test hook: ${err.message}\n`);
  return 1;
});
