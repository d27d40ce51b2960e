/**
 * The host's hand-encoded grpc.health.v1 client (sdk/health-client.ts)
 * against the health service the SDK serves (grpc-health-check's
 * implementation), over a real gRPC server on a Unix socket.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { credentials, Metadata, Server, ServerCredentials, status } from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';
import { decodeCheckResponse, encodeCheckRequest, HealthClient, SERVING } from '../../../sdk/health-client.js';

const codecCases = [
  { what: 'empty response is UNKNOWN', bytes: [], status: 0 },
  { what: 'SERVING', bytes: [0x08, 0x01], status: 1 },
  { what: 'NOT_SERVING', bytes: [0x08, 0x02], status: 2 },
  { what: 'an unknown length-delimited field is skipped', bytes: [0x12, 0x02, 0x61, 0x62, 0x08, 0x03], status: 3 },
];
for (const c of codecCases) {
  test(`decodeCheckResponse: ${c.what}`, (t) => {
    t.is(decodeCheckResponse(Uint8Array.from(c.bytes)), c.status);
  });
}

test('encodeCheckRequest: field 1 as a string; the empty name as no bytes (proto3 default)', (t) => {
  t.deepEqual([...encodeCheckRequest('ab')], [0x0a, 0x02, 0x61, 0x62]);
  t.is(encodeCheckRequest('').length, 0);
});

test('HealthClient against grpc-health-check: serving, not serving, unknown service', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'health-client-'));
  const server = new Server();
  const health = new HealthImplementation({ up: 'SERVING', down: 'NOT_SERVING' });
  health.addToServer(server);
  const socket = join(dir, 's.sock');
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${socket}`, ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
  const client = new HealthClient(`unix://${socket}`, credentials.createInsecure());
  const check = (service: string) =>
    new Promise<{ code?: number; status?: number }>((resolve) =>
      client.check({ service }, new Metadata(), { deadline: Date.now() + 10_000 }, (err, res) =>
        resolve(err ? { code: err.code } : { status: res?.status }),
      ),
    );
  try {
    t.deepEqual(await check('up'), { status: SERVING });
    t.deepEqual(await check('down'), { status: 2 });
    t.deepEqual(await check('missing'), { code: status.NOT_FOUND });
  } finally {
    client.close();
    server.forceShutdown();
    await rm(dir, { recursive: true, force: true });
  }
});
