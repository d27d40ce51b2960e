/**
 * The check of a provider's GetMetrics answer before the host serves it: the
 * Prometheus text exposition format 0.0.4, line by line, with bounds. A
 * provider's families may not shadow the host's own (the host's text comes
 * first and a scraper would see two families of one name).
 */

/** Largest answer served (the protocol's GetMetricsResponse limit). */
export const MAX_PLUGIN_METRICS_BYTES = 4 * 1024 * 1024;
/** Longest line accepted. */
const MAX_LINE_CHARS = 64 * 1024;

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL_NAME = '[a-zA-Z_][a-zA-Z0-9_]*';
const LABEL_VALUE = '"(?:[^"\\\\\\n]|\\\\[\\\\"n])*"';
const LABEL = `${LABEL_NAME}=${LABEL_VALUE}`;
const VALUE = '(?:[-+]?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE][-+]?\\d+)?|[-+]?Inf|NaN)';
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(?:${LABEL}(?:,${LABEL})*,?)?\\})? ${VALUE}(?: -?\\d+)?$`);
const HELP = new RegExp(`^# HELP (${NAME})(?: .*)?$`);
const TYPE = new RegExp(`^# TYPE (${NAME}) (?:counter|gauge|histogram|summary|untyped)$`);
const NAME_AT_START = new RegExp(`^${NAME}`);

/** The metric names a text exposition uses (samples, HELP and TYPE lines). */
export function exposedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const m = line.startsWith('# ') ? /^# (?:HELP|TYPE) (\S+)/.exec(line) : NAME_AT_START.exec(line);
    if (m) names.add(m[1] ?? m[0]);
  }
  return names;
}

/**
 * `text` checked as text format: the lines to serve (every line of a family
 * named in `reserved` left out, with the names left out), or the first
 * problem, naming the line. Empty lines and `#` comments are kept.
 */
export function checkPluginMetrics(text: string, reserved: ReadonlySet<string>): { text: string; shadowed: string[] } | { problem: string } {
  if (Buffer.byteLength(text) > MAX_PLUGIN_METRICS_BYTES) return { problem: `the answer is larger than ${MAX_PLUGIN_METRICS_BYTES} bytes` };
  const kept: string[] = [];
  const shadowed = new Set<string>();
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.replace(/\r$/, '');
    if (line.trim() === '') continue;
    if (line.length > MAX_LINE_CHARS) return { problem: `line ${i + 1} is longer than ${MAX_LINE_CHARS} characters` };
    let name: string | undefined;
    if (line.startsWith('#')) {
      if (line.startsWith('# HELP ') || line.startsWith('# TYPE ')) {
        const m = (line.startsWith('# HELP ') ? HELP : TYPE).exec(line);
        if (!m) return { problem: `line ${i + 1} is not a valid HELP or TYPE line: ${JSON.stringify(line.slice(0, 200))}` };
        name = m[1]!;
      }
    } else {
      const m = SAMPLE.exec(line);
      if (!m) return { problem: `line ${i + 1} is not a valid sample: ${JSON.stringify(line.slice(0, 200))}` };
      name = m[1]!;
    }
    if (name !== undefined && shadows(name, reserved)) {
      shadowed.add(name);
      continue;
    }
    kept.push(line);
  }
  return { text: kept.length ? kept.join('\n') + '\n' : '', shadowed: [...shadowed] };
}

/**
 * `text` (as checkPluginMetrics returns it) with label `name="value"` first
 * in every sample that has no label of that name: the host's plugin metrics
 * carry the plugin's name in `plugin`, and so do the plugin's own. A sample
 * that already has the label keeps its own value.
 */
export function addLabel(text: string, name: string, value: string): string {
  const pair = `${name}="${value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`))}"`;
  return text
    .split('\n')
    .map((line) => {
      if (line === '' || line.startsWith('#')) return line;
      const m = NAME_AT_START.exec(line)!;
      const rest = line.slice(m[0].length);
      if (!rest.startsWith('{')) return `${m[0]}{${pair}}${rest}`;
      if (hasLabel(rest, name)) return line;
      return rest.startsWith('{}') ? `${m[0]}{${pair}}${rest.slice(2)}` : `${m[0]}{${pair},${rest.slice(1)}`;
    })
    .join('\n');
}

/** Whether the label set at the start of `rest` (`{...} value`, a checked sample) has label `name`. */
function hasLabel(rest: string, name: string): boolean {
  const pair = new RegExp(`[{,](${LABEL_NAME})=${LABEL_VALUE}`, 'y');
  for (let m = pair.exec(rest); m; m = pair.exec(rest)) if (m[1] === name) return true;
  return false;
}

/** Whether `name` (or the family a histogram/summary sample belongs to) is one the host serves. */
function shadows(name: string, reserved: ReadonlySet<string>): boolean {
  if (reserved.has(name)) return true;
  const family = /^(.*)_(?:bucket|sum|count|total|created)$/.exec(name)?.[1];
  return family !== undefined && reserved.has(family);
}

/**
 * Several providers' checked texts as one exposition: a family that more
 * than one provider serves (two local clouds both serve `localcloud_objects`)
 * gets its HELP and TYPE once (the first provider's) and all their samples
 * together, as the text format wants one block per family. Families keep the
 * order in which they first appear.
 */
export function mergeExpositions(texts: readonly string[]): string {
  if (texts.length <= 1) return texts[0] ?? '';
  const families = new Map<string, { header: string[]; samples: string[] }>();
  const block = (name: string) => {
    let b = families.get(name);
    if (!b) families.set(name, (b = { header: [], samples: [] }));
    return b;
  };
  for (const text of texts) {
    let current: string | undefined;
    const headed = new Set<string>();
    for (const line of text.split('\n')) {
      if (line === '') continue;
      const meta = /^# (HELP|TYPE) (\S+)/.exec(line);
      if (meta) {
        current = meta[2]!;
        const b = block(current);
        // The first provider's HELP and TYPE; a later provider's are dropped.
        if (b.header.length === 0 || headed.has(current)) {
          b.header.push(line);
          headed.add(current);
        }
        continue;
      }
      if (line.startsWith('#')) continue;
      const name = NAME_AT_START.exec(line)?.[0] ?? '';
      const belongs = current !== undefined && (name === current || new RegExp(`^${current}_(?:bucket|sum|count|total|created)$`).test(name));
      if (!belongs) current = name;
      block(current!).samples.push(line);
    }
  }
  const out: string[] = [];
  for (const b of families.values()) out.push(...b.header, ...b.samples);
  return out.length ? out.join('\n') + '\n' : '';
}
