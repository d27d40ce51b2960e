/**
 * The shipped-RBAC check of test hosts: a host that met a 403 Forbidden
 * fails its test, because the shipped ClusterRole (deploy/base/rbac.yaml) lacks a
 * permission it needs. In-process hosts are checked through their
 * rest_client_requests_total metric and their log; host processes through
 * their log (watch failures carry `"code":403` in JSON lines, `code=403` in
 * klog text lines; logged request errors `HTTP 403`).
 */
import { readFile } from 'node:fs/promises';
import type { HostHandle } from '../../host/app.js';

/** Lines of the log at `logPath` (from byte `offset`) that report a 403. */
export async function forbiddenInLog(logPath: string, offset = 0): Promise<number> {
  const log = await readFile(logPath).catch(() => Buffer.alloc(0));
  return log
    .subarray(offset)
    .toString('utf8')
    .split('\n')
    .filter((l) => FORBIDDEN_LINE.test(l)).length;
}

/** A log line (JSON or klog text) that reports a 403. */
const FORBIDDEN_LINE = /"code":403\b|\bcode=403\b|HTTP 403\b/;

/** When (ms since the epoch, from each JSON line's `time`: run the host with --logging-format=json) the log at `logPath` reports a 403. */
export async function forbiddenLogTimes(logPath: string): Promise<number[]> {
  const log = await readFile(logPath, 'utf8').catch(() => '');
  return log
    .split('\n')
    .filter((l) => FORBIDDEN_LINE.test(l))
    .map((l) => Date.parse(/"time":"([^"]+)"/.exec(l)?.[1] ?? ''));
}

/** 403s in an in-process host's rest_client_requests_total plus those in its log. */
export async function forbiddenCount(host: HostHandle, logPath: string): Promise<number> {
  const metric = await host.metrics.registry.getSingleMetric('rest_client_requests_total')?.get();
  const fromMetric = (metric?.values ?? []).filter((v) => v.labels.code === '403').reduce((n, v) => n + v.value, 0);
  return fromMetric + (await forbiddenInLog(logPath));
}

/** Throws, naming the log, when `count` > 0. */
export function assertNoForbidden(count: number, logPath: string): void {
  if (count > 0)
    throw new Error(
      `the test host met ${count} 403 Forbidden answer(s): the shipped RBAC (deploy/base/rbac.yaml) lacks a permission; see ${logPath}`,
    );
}

/** Makes an in-process host's stop() also fail on any 403 it met. */
export function checkForbiddenOnStop<H extends HostHandle>(host: H, logPath: string): H & { logPath: string } {
  const stop = host.stop;
  return Object.assign(host, {
    logPath,
    async stop() {
      await stop();
      assertNoForbidden(await forbiddenCount(host, logPath), logPath);
    },
  });
}
