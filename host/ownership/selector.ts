/**
 * Kubernetes label selectors as text (kubectl -l, the API's labelSelector
 * query parameter), parsed and matched in the host: a provider's node
 * ownership selector (GetPluginCapabilitiesResponse.node_selector) is
 * matched against cached Nodes, not sent to the API server.
 *
 * Terms, comma-separated, all must match: `k=v`, `k==v`, `k!=v`, `k`, `!k`,
 * `k in (a,b)`, `k notin (a,b)`. As in Kubernetes, `k!=v` and `k notin (…)`
 * also match a Node without the label.
 */

export type SelectorTerm = { op: 'exists' | 'absent'; key: string } | { op: 'in' | 'notin'; key: string; values: readonly string[] };

/** A parsed selector; no terms matches every label set. */
export interface LabelSelector {
  readonly text: string;
  readonly terms: readonly SelectorTerm[];
}

// A label key: an optional DNS-subdomain prefix and a name; a value: empty or a name.
const KEY = String.raw`(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?`;
const VALUE = String.raw`(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?`;
const EQUALITY = new RegExp(String.raw`^(${KEY})\s*(==|=|!=)\s*(${VALUE})$`);
const SET = new RegExp(String.raw`^(${KEY})\s+(in|notin)\s*\(([^()]*)\)$`);
const EXISTS = new RegExp(String.raw`^(!?)\s*(${KEY})$`);
const VALUE_ONLY = new RegExp(`^${VALUE}$`);

/** Parses `text`; throws an Error naming the bad term (one line) when it is not a selector. */
export function parseLabelSelector(text: string): LabelSelector {
  const trimmed = text.trim();
  if (trimmed === '') return { text: '', terms: [] };
  const terms: SelectorTerm[] = [];
  for (const raw of trimmed.split(/,(?![^(]*\))/)) {
    const t = raw.trim();
    let m: RegExpExecArray | null;
    if ((m = EQUALITY.exec(t))) {
      terms.push({ op: m[2] === '!=' ? 'notin' : 'in', key: m[1]!, values: [m[3]!] });
    } else if ((m = SET.exec(t))) {
      const values = m[3]!.split(',').map((v) => v.trim());
      if (values.some((v) => !VALUE_ONLY.test(v))) throw new Error(`${JSON.stringify(t)} has an invalid label value`);
      terms.push({ op: m[2] as 'in' | 'notin', key: m[1]!, values });
    } else if ((m = EXISTS.exec(t))) {
      terms.push({ op: m[1] === '!' ? 'absent' : 'exists', key: m[2]! });
    } else {
      throw new Error(`${JSON.stringify(t)} is not a label selector term; want e.g. pool=a, pool in (a,b) or !pool`);
    }
  }
  return { text: trimmed, terms };
}

/** Whether `labels` satisfy every term of `selector`. */
export function selectorMatches(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  return selector.terms.every((term) => {
    const has = Object.prototype.hasOwnProperty.call(labels, term.key);
    switch (term.op) {
      case 'exists':
        return has;
      case 'absent':
        return !has;
      case 'in':
        return has && term.values.includes(labels[term.key]!);
      case 'notin':
        return !has || !term.values.includes(labels[term.key]!);
    }
  });
}
