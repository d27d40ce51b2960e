/**
 * A client for grpc.health.v1 Health/Check, encoded by hand with the wire
 * helpers the generated code already uses. `grpc-health-check`'s service
 * definition loads @grpc/proto-loader and protobufjs at run time, which cost
 * the host about 5 MiB of RSS for one two-field request; the plugin side
 * (sdk/serve.ts) still uses that package to serve the health service. Used
 * by the host's plugin connection and by a provider's `probe` (sdk/probe.ts).
 */
import { BinaryReader, BinaryWriter } from '@bufbuild/protobuf/wire';
import {
  makeGenericClientConstructor,
  type ChannelCredentials,
  type Client,
  type ClientUnaryCall,
  type Metadata,
  type ServiceError,
} from '@grpc/grpc-js';

/** HealthCheckResponse.ServingStatus.SERVING in grpc/health/v1/health.proto. */
export const SERVING = 1;

/** HealthCheckRequest { string service = 1; } */
export function encodeCheckRequest(service: string): Buffer {
  const w = new BinaryWriter();
  if (service !== '') w.uint32(10).string(service);
  return Buffer.from(w.finish());
}

/** HealthCheckResponse { ServingStatus status = 1; }: the status, 0 (UNKNOWN) when absent; other fields skipped. */
export function decodeCheckResponse(bytes: Uint8Array): number {
  const r = new BinaryReader(bytes);
  let status = 0;
  while (r.pos < r.len) {
    const [field, wireType] = r.tag();
    if (field === 1 && wireType === 0) status = r.int32();
    else r.skip(wireType);
  }
  return status;
}

export const HealthClient = makeGenericClientConstructor(
  {
    check: {
      path: '/grpc.health.v1.Health/Check',
      requestStream: false,
      responseStream: false,
      requestSerialize: (req: { service: string }) => encodeCheckRequest(req.service),
      requestDeserialize: () => ({ service: '' }),
      responseSerialize: () => Buffer.alloc(0),
      responseDeserialize: (b: Buffer) => ({ status: decodeCheckResponse(b) }),
    },
  },
  'Health',
) as unknown as new (
  address: string,
  creds: ChannelCredentials,
  options?: object,
) => Client & {
  check(
    req: { service: string },
    md: Metadata,
    opts: { deadline: number },
    cb: (err: ServiceError | null, res?: { status: number }) => void,
  ): ClientUnaryCall;
};
