/**
 * Baseline for the RPC benchmark: a plain grpc-js server (no SDK) answering
 * IdentityService.Probe on a Unix socket given as argv[2]. Prints "ready"
 * once bound; exits when stdin closes.
 */
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { IdentityServiceService } from '../../proto/gen/ccm/provider/v1/identity.js';

const socket = process.argv[2]!;
const server = new Server();
server.addService(IdentityServiceService, {
  getPluginInfo: (_c: unknown, cb: (e: null, r: object) => void) => cb(null, { providerFlags: [], providerControllers: [] }),
  getPluginCapabilities: (_c: unknown, cb: (e: null, r: object) => void) => cb(null, {}),
  probe: (_c: unknown, cb: (e: null, r: object) => void) => cb(null, { ready: true }),
});
server.bindAsync(`unix://${socket}`, ServerCredentials.createInsecure(), (err) => {
  if (err) {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
  process.stdout.write('ready\n');
});
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
