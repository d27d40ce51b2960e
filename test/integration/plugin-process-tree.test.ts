/**
 * Finding and killing a plugin's processes from /proc with real processes:
 * a leader in its own group with a child in the group, a child in a session
 * of its own that kept the marker, and one that also cleared its environment
 * (found while its parent lives, or from a snapshot after the parent died).
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { findPluginProcesses, killPluginProcesses, processStartTime, snapshotPluginProcesses } from '../../host/plugin/process-tree.js';
import { waitFor } from '../helpers/wait.js';

const LEADER = `
const { spawn } = require('child_process');
const idle = ['-e', 'setInterval(() => {}, 60000)'];
const inGroup = spawn(process.execPath, idle, { stdio: 'ignore' });
const setsidMarked = spawn(process.execPath, idle, { stdio: 'ignore', detached: true });
const setsidCleared = spawn(process.execPath, idle, { stdio: 'ignore', detached: true, env: {} });
console.log(JSON.stringify({ inGroup: inGroup.pid, setsidMarked: setsidMarked.pid, setsidCleared: setsidCleared.pid }));
setInterval(() => {}, 60000);
`;

async function running(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat !== '' && stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
}

async function startTree(marker: string) {
  const [name, value] = marker.split('=') as [string, string];
  const leader = spawn(process.execPath, ['-e', LEADER], { detached: true, stdio: ['ignore', 'pipe', 'inherit'], env: { [name]: value } });
  const line = await new Promise<string>((resolve) => leader.stdout.once('data', (d: Buffer) => resolve(String(d))));
  const pids = JSON.parse(line) as Record<'inGroup' | 'setsidMarked' | 'setsidCleared', number>;
  // With the leader's start time, as the host does: only newer processes' environments are read.
  return { leader, pids, tree: { groupId: leader.pid!, marker, startTime: await processStartTime(leader.pid!) } };
}

test('the group, marked processes in other sessions, and their descendants are found; a snapshot finds an unmarked one after its parent died', async (t) => {
  const marker = `CCM_PLUGIN_INSTANCE_ID=${randomUUID()}`;
  const { leader, pids, tree } = await startTree(marker);
  t.teardown(
    () =>
      void [leader.pid!, ...Object.values(pids)].forEach((p) => {
        try {
          process.kill(p, 'SIGKILL');
        } catch {
          /* gone */
        }
      }),
  );
  const all = [leader.pid!, pids.inGroup, pids.setsidMarked, pids.setsidCleared];
  t.deepEqual((await findPluginProcesses(tree)).sort(), [...all].sort(), 'every process found while the leader lives');
  const snapshot = new Map((await snapshotPluginProcesses(tree)).map((p) => [p.pid, p.startTime]));

  leader.kill('SIGKILL');
  await waitFor(async () => !(await running(leader.pid!)) || undefined, { what: 'leader gone' });
  // Re-parented, in its own session, without the marker: only the snapshot knows it.
  t.false((await findPluginProcesses(tree)).includes(pids.setsidCleared));
  t.true((await findPluginProcesses(tree)).includes(pids.setsidMarked), 'the marked one is still found after its parent died');

  await killPluginProcesses(tree, snapshot);
  for (const [name, pid] of Object.entries(pids)) {
    await waitFor(async () => !(await running(pid)) || undefined, { what: `${name} (${pid}) killed`, timeoutMs: 10_000 });
  }
  t.deepEqual(await findPluginProcesses(tree), []);
});

test('this process and its ancestors are never among the found, even when they carry the marker', async (t) => {
  // This process and the test runner above it started with this PATH.
  const found = await findPluginProcesses({ groupId: process.pid, marker: `PATH=${process.env.PATH ?? ''}` });
  t.false(found.includes(process.pid));
  t.false(found.includes(process.ppid));
});
