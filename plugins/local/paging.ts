/**
 * Keyset paging with opaque page tokens. A token records the sort key of the
 * last item returned (not an offset), so items created or deleted between
 * pages never make a page skip or repeat a surviving item. A token names the
 * list and scope it belongs to; any other token answers ABORTED.
 */
import { Code, InvalidArgumentError, ProviderError } from '../../sdk/errors.js';

/** Page size used when the request says 0. */
const DEFAULT_PAGE_SIZE = 100;
/** Largest page size honoured; larger requests are clamped. */
const MAX_PAGE_SIZE = 1000;

interface TokenBody {
  /** Which list ("routes", "volumes"). */
  l: string;
  /** Scope within the list (e.g. cluster name). */
  s: string;
  /** Sort key of the last item of the previous page. */
  k: string;
}

/** One page of `items` (any order; sorted here by `keyOf`) after `pageToken`. */
export function paginate<T>(
  items: readonly T[],
  keyOf: (item: T) => string,
  req: { pageSize: number; pageToken: string },
  list: string,
  scope: string,
): { page: T[]; nextPageToken: string } {
  if (!Number.isInteger(req.pageSize) || req.pageSize < 0) throw new InvalidArgumentError(`page_size must be >= 0, got ${req.pageSize}`);
  const size = Math.min(req.pageSize || DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
  const after = req.pageToken ? decodeToken(req.pageToken, list, scope) : undefined;
  const sorted = items
    .map((item) => ({ item, key: keyOf(item) }))
    .filter((e) => after === undefined || e.key > after)
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const page = sorted.slice(0, size);
  const more = sorted.length > size;
  const last = page[page.length - 1];
  return { page: page.map((e) => e.item), nextPageToken: more && last ? encodeToken({ l: list, s: scope, k: last.key }) : '' };
}

function encodeToken(body: TokenBody): string {
  return Buffer.from(JSON.stringify(body), 'utf8').toString('base64url');
}

function decodeToken(token: string, list: string, scope: string): string {
  const invalid = () => new ProviderError(Code.ABORTED, `invalid page token for ${list}: start again from the first page`);
  if (!/^[A-Za-z0-9_-]+$/.test(token)) throw invalid();
  let body: Partial<TokenBody>;
  try {
    body = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as Partial<TokenBody>;
  } catch {
    throw invalid();
  }
  if (typeof body !== 'object' || body === null || body.l !== list || body.s !== scope || typeof body.k !== 'string') throw invalid();
  return body.k;
}
