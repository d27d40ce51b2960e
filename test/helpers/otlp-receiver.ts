/**
 * A tiny OTLP/HTTP trace receiver for tests: POST /v1/traces with the JSON
 * encoding (what @opentelemetry/exporter-trace-otlp-http sends) or the
 * protobuf one (application/x-protobuf: what the Go and Python OTLP/HTTP
 * exporters send), spans kept flat with their resource's service.name.
 * Binds 127.0.0.1 port 0.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/** One received span, flattened. Ids are lower-case hex; parentSpanId is '' for a root. */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
}

interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface KeyValue {
  key: string;
  value?: AnyValue;
}
interface ExportRequest {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: { spans?: { traceId: string; spanId: string; parentSpanId?: string; name: string; kind?: number; attributes?: KeyValue[] }[] }[];
  }[];
}

function attrs(list: KeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value = {} } of list ?? []) {
    const v = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ?? value.boolValue ?? value.doubleValue;
    if (v !== undefined) out[key] = v;
  }
  return out;
}

/** One protobuf field: its number, and its value (a varint, or the bytes of a length-delimited or fixed field). */
interface Field {
  no: number;
  varint?: bigint;
  bytes?: Buffer;
}

/** The fields of one protobuf message, in order (wire types 0, 1, 2, 5; groups are not used by OTLP). */
function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let at = 0;
  const varint = (): bigint => {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const b = buf[at++];
      if (b === undefined) throw new Error('truncated varint');
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
  };
  while (at < buf.length) {
    const key = varint();
    const no = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) out.push({ no, varint: varint() });
    else if (wire === 2) {
      const len = Number(varint());
      out.push({ no, bytes: buf.subarray(at, at + len) });
      at += len;
    } else if (wire === 1 || wire === 5) {
      const len = wire === 1 ? 8 : 4;
      out.push({ no, bytes: buf.subarray(at, at + len) });
      at += len;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

const sub = (fs: Field[], no: number): Buffer[] => fs.filter((f) => f.no === no && f.bytes).map((f) => f.bytes!);

/** opentelemetry.proto.common.v1.KeyValue list, decoded to the JSON shape. */
function protoKeyValues(list: Buffer[]): KeyValue[] {
  return list.map((kv) => {
    const f = fields(kv);
    const key = sub(f, 1)[0]?.toString('utf8') ?? '';
    const v = fields(sub(f, 2)[0] ?? Buffer.alloc(0));
    const value: AnyValue = {};
    for (const x of v) {
      if (x.no === 1 && x.bytes) value.stringValue = x.bytes.toString('utf8');
      else if (x.no === 2 && x.varint !== undefined) value.boolValue = x.varint !== 0n;
      else if (x.no === 3 && x.varint !== undefined) value.intValue = BigInt.asIntN(64, x.varint).toString();
      else if (x.no === 4 && x.bytes) value.doubleValue = x.bytes.readDoubleLE(0);
    }
    return { key, value };
  });
}

/** An ExportTraceServiceRequest in protobuf, decoded to the JSON shape (ids as lower-case hex, as the JSON encoding has them). */
function fromProtobuf(body: Buffer): ExportRequest {
  return {
    resourceSpans: sub(fields(body), 1).map((rs) => {
      const rf = fields(rs);
      return {
        resource: { attributes: protoKeyValues(sub(fields(sub(rf, 1)[0] ?? Buffer.alloc(0)), 1)) },
        scopeSpans: sub(rf, 2).map((ss) => ({
          spans: sub(fields(ss), 2).map((span) => {
            const f = fields(span);
            return {
              traceId: sub(f, 1)[0]?.toString('hex') ?? '',
              spanId: sub(f, 2)[0]?.toString('hex') ?? '',
              parentSpanId: sub(f, 4)[0]?.toString('hex') ?? '',
              name: sub(f, 5)[0]?.toString('utf8') ?? '',
              kind: Number(f.find((x) => x.no === 6)?.varint ?? 0n),
              attributes: protoKeyValues(sub(f, 9)),
            };
          }),
        })),
      };
    }),
  };
}

/** The receiver: `url` is the traces endpoint (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); `requests` counts every request, whatever its path. */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  requests = 0;
  /** The traces endpoint, set by {@link OtlpReceiver.start}. */
  url = '';
  private server: Server | undefined;

  private constructor() {}

  static async start(): Promise<OtlpReceiver> {
    const self = new OtlpReceiver();
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        self.requests++;
        try {
          const raw = req.headers['content-encoding'] === 'gzip' ? gunzipSync(Buffer.concat(chunks)) : Buffer.concat(chunks);
          const body = (req.headers['content-type'] ?? '').includes('protobuf')
            ? fromProtobuf(raw)
            : (JSON.parse(raw.toString('utf8')) as ExportRequest);
          for (const rs of body.resourceSpans ?? []) {
            const service = String(attrs(rs.resource?.attributes)['service.name'] ?? '');
            for (const ss of rs.scopeSpans ?? [])
              for (const s of ss.spans ?? [])
                self.spans.push({
                  service,
                  traceId: s.traceId,
                  spanId: s.spanId,
                  parentSpanId: s.parentSpanId ?? '',
                  name: s.name,
                  kind: s.kind ?? 0,
                  attributes: attrs(s.attributes),
                });
          }
          // An empty ExportTraceServiceResponse in the request's encoding.
          if ((req.headers['content-type'] ?? '').includes('protobuf')) res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end();
          else res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
        } catch {
          res.writeHead(400).end();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    self.server = server;
    self.url = `http://127.0.0.1:${port}/v1/traces`;
    return self;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
