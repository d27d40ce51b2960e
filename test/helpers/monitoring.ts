/**
 * The monitoring bundle (deploy/components/monitoring): its alert rules,
 * dashboard, and the metric names they query, for the tests that check the
 * rules with promtool and the names against what a running host (and the
 * bridged AWS provider behind it) serves.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadYaml } from '@kubernetes/client-node';
import { DEPLOY_DIR } from './manifests.js';

export const MONITORING_DIR = join(DEPLOY_DIR, 'components', 'monitoring');

export interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
export interface RuleGroup {
  name: string;
  rules: Rule[];
}

/** The PrometheusRule's spec: `{ groups }`, a promtool rule file once dumped as YAML. */
export async function ruleGroups(): Promise<{ groups: RuleGroup[] }> {
  const obj = loadYaml<{ kind: string; spec: { groups: RuleGroup[] } }>(await readFile(join(MONITORING_DIR, 'prometheusrule.yaml'), 'utf8'));
  if (obj.kind !== 'PrometheusRule') throw new Error(`prometheusrule.yaml holds a ${obj.kind}`);
  return obj.spec;
}

export interface DashboardPanel {
  id: number;
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: { refId: string; expr: string; legendFormat?: string }[];
}
export interface Dashboard {
  title: string;
  uid: string;
  panels: DashboardPanel[];
  templating: { list: { name: string; type: string; query?: string }[] };
}

export async function dashboard(): Promise<Dashboard> {
  return JSON.parse(await readFile(join(MONITORING_DIR, 'dashboard.json'), 'utf8')) as Dashboard;
}

/** PromQL words that look like names: keywords, and `le` of histogram_quantile groupings is removed with its parentheses. */
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'inf', 'nan']);

/**
 * The metric names a PromQL expression selects. Enough for the expressions
 * this repository writes (checked by promtool): strings, label matchers,
 * ranges and grouping clauses are cut out first; what remains of an
 * identifier not followed by `(` (a function or an aggregation) is a metric.
 */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const m of bare.matchAll(/(?<![\w.$])[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const after = bare.slice(m.index + m[0].length).trimStart();
    if (after.startsWith('(') || KEYWORDS.has(m[0].toLowerCase())) continue;
    names.add(m[0]);
  }
  return [...names];
}

/** Every metric the rules and the dashboard query, each with where (alert name or panel title). */
export async function bundleMetrics(): Promise<Map<string, string[]>> {
  const uses = new Map<string, string[]>();
  const add = (expr: string, where: string) => {
    for (const n of metricNames(expr)) uses.set(n, [...(uses.get(n) ?? []), where]);
  };
  for (const g of (await ruleGroups()).groups) for (const r of g.rules) add(r.expr, `alert ${r.alert ?? r.record}`);
  for (const p of (await dashboard()).panels) for (const t of p.targets ?? []) add(t.expr, `panel "${p.title}"`);
  return uses;
}

/** Metrics Prometheus makes itself when it scrapes (not served by anyone). */
export const SCRAPE_METRICS = new Set(['up']);

/**
 * Whether `name` is served by the provider process (the bridge's export of
 * its registry: the provider's own families and its process's, renamed
 * ccm_plugin_go_* etc.), not by the host itself.
 */
export function fromProviderProcess(name: string): boolean {
  return /^(cloudprovider_|ccm_plugin_(go|process|rest_client|workqueue)_)/.test(name);
}

/** Whether `name` (a sample name, `_bucket`/`_count`/`_sum` of a histogram included) is a family in `exposed`. */
export function isExposed(name: string, exposed: ReadonlySet<string>): boolean {
  return exposed.has(name) || exposed.has(name.replace(/_(?:bucket|count|sum)$/, ''));
}
