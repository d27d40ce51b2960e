import test from 'ava';
import { requestPath, requestUrl, type Query } from '../../../host/kube/rest.js';

// The request path is built as a string (no URL object per request, issue 34 per-object CPU); it must be what
// the URL way gives for every path, the plain ones on the string way and the rest by falling back to it.
const Q: Query = { labelSelector: 'a=b,c in (x y)', fieldSelector: 'spec.nodeName=n 1', limit: 500, watch: true, empty: '', none: undefined };
const table: { name: string; server: string; path: string; query?: Query }[] = [
  { name: 'a Node', server: 'https://127.0.0.1:6443', path: '/api/v1/nodes/n1' },
  {
    name: 'a status subresource, encoded name',
    server: 'https://127.0.0.1:6443',
    path: `/api/v1/namespaces/ns/services/${encodeURIComponent('a:b')}/status`,
  },
  { name: 'a list with selectors, numbers, booleans, empty and undefined values', server: 'https://h.example:6443', path: '/api/v1/nodes', query: Q },
  { name: 'only empty and undefined values: no query', server: 'https://h.example', path: '/api/v1/nodes', query: { a: '', b: undefined } },
  {
    name: 'a server with a path prefix and trailing slash',
    server: 'https://h.example/k8s/',
    path: '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x',
    query: Q,
  },
  { name: 'an IPv6 server', server: 'https://[::1]:6443', path: '/api/v1/nodes/n1', query: { dryRun: 'All' } },
  { name: 'plain ASCII punctuation kept', server: 'https://h', path: "/api/v1/x/a!$&'()*+,;=@[]^_|~:-" },
  { name: 'a space (URL way)', server: 'https://h', path: '/api/v1/nodes/a b', query: Q },
  { name: 'a query in the path (URL way)', server: 'https://h', path: '/api/v1/nodes?limit=1', query: { watch: true } },
  { name: 'a fragment (URL way)', server: 'https://h', path: '/api/v1/nodes#x' },
  { name: 'a dot segment (URL way)', server: 'https://h/p', path: '/api/v1/../nodes/./n1' },
  { name: 'an encoded dot segment (URL way)', server: 'https://h', path: '/api/v1/%2E%2e/nodes' },
  { name: 'non-ASCII (URL way)', server: 'https://h', path: '/api/v1/nodes/né' },
  { name: 'a backslash, quotes, braces, backtick (URL way)', server: 'https://h', path: '/api/v1/a\\b"c{d}e`f<g>' },
];

for (const { name, server, path, query } of table) {
  test(`requestPath: ${name}: as the URL gives it`, (t) => {
    const base = new URL(server);
    const url = requestUrl(base, path, query);
    const got = requestPath(base, path, query, base.pathname.replace(/\/$/, ''));
    t.deepEqual(got, { path: url.pathname + url.search, pathname: url.pathname });
  });
}
