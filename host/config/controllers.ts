/**
 * `--controllers` semantics, as upstream (kubernetes/controller-manager
 * app.IsControllerEnabled): entries are read left to right and the first one
 * that names a controller decides (`name` enables, `-name` disables); a
 * controller no entry names is enabled only if `*` appears. Aliases
 * (`cloud-node`, `service`, ...) mean their canonical name.
 */
import { ControllerAliases, Controllers, type ControllerName } from '../names.js';

/** Every controller, in start order. */
const ALL_CONTROLLERS: readonly ControllerName[] = Object.values(Controllers);

/** Canonical name for a canonical name or alias; undefined when unknown. */
function canonicalControllerName(name: string): ControllerName | undefined {
  if ((ALL_CONTROLLERS as readonly string[]).includes(name)) return name as ControllerName;
  return ControllerAliases[name];
}

/** "cloud-node-controller (alias cloud-node), ..." for error messages. */
function validNames(): string {
  const aliasOf = (c: ControllerName) => Object.keys(ControllerAliases).filter((a) => ControllerAliases[a] === c);
  const names = ALL_CONTROLLERS.map((c) => {
    const aliases = aliasOf(c);
    return aliases.length ? `${c} (alias ${aliases.join(', ')})` : c;
  });
  return names.join(', ');
}

/**
 * Problems with a `--controllers` list, one message per unknown entry; each
 * lists the valid names. Empty when the list is valid.
 */
export function controllerSpecErrors(spec: readonly string[]): string[] {
  const errors: string[] = [];
  for (const entry of spec) {
    if (entry === '*') continue;
    const name = entry.startsWith('-') ? entry.slice(1) : entry;
    if (canonicalControllerName(name) === undefined) {
      errors.push(`--controllers: unknown controller "${entry}": use * (all) or names from ${validNames()}; prefix a name with - to disable it`);
    }
  }
  return errors;
}

/**
 * The controllers a `--controllers` list enables, e.g. `['*', '-route']` →
 * every controller but node-route-controller; `['cloud-node']` → only
 * cloud-node-controller; `[]` → none. Throws on an unknown name (validate
 * with controllerSpecErrors first to report every problem at once).
 */
export function resolveEnabledControllers(spec: string[]): Set<ControllerName> {
  const errors = controllerSpecErrors(spec);
  if (errors.length > 0) throw new Error(errors.join('\n'));
  const enabled = new Set<ControllerName>();
  const star = spec.includes('*');
  for (const controller of ALL_CONTROLLERS) {
    let decision: boolean | undefined;
    for (const entry of spec) {
      if (entry === '*') continue;
      const disable = entry.startsWith('-');
      if (canonicalControllerName(disable ? entry.slice(1) : entry) === controller) {
        decision = !disable;
        break;
      }
    }
    if (decision ?? star) enabled.add(controller);
  }
  return enabled;
}
