/**
 * A tiny OTLP/HTTP trace receiver for tests: POST /v1/traces with the JSON
 * encoding (what @opentelemetry/exporter-trace-otlp-http sends), spans kept
 * flat with their resource's service.name. Binds 127.0.0.1 port 0.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

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
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ExportRequest;
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
          res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
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
