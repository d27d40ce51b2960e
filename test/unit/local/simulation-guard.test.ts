/** The local cloud's start guard (plugins/local/simulation-guard.ts): only LOCALCLOUD_ALLOW_SIMULATION=true lets it start. */
import test from 'ava';
import { ALLOW_SIMULATION_ENV, simulationRefusal } from '../../../plugins/local/simulation-guard.js';

/** The variable's value (undefined: unset) → whether the provider starts. */
const CASES: [string | undefined, boolean][] = [
  ['true', true],
  [undefined, false],
  ['', false],
  ['false', false],
  ['1', false],
  ['yes', false],
  ['TRUE', false],
  [' true', false],
];

for (const [value, starts] of CASES) {
  test(`${ALLOW_SIMULATION_ENV}=${value === undefined ? '(unset)' : JSON.stringify(value)}: ${starts ? 'starts' : 'refused'}`, (t) => {
    const env: NodeJS.ProcessEnv = value === undefined ? {} : { [ALLOW_SIMULATION_ENV]: value };
    const refusal = simulationRefusal(env);
    if (starts) {
      t.is(refusal, undefined);
      return;
    }
    t.truthy(refusal);
    t.false(refusal!.includes('\n'), 'one line');
    t.regex(refusal!, /the local cloud is a simulation for tests and demos/);
    t.true(refusal!.includes(`set ${ALLOW_SIMULATION_ENV}=true`), 'how to allow it');
    t.true(refusal!.includes(`--plugin-env=${ALLOW_SIMULATION_ENV}=true`), 'and how through the host in exec mode');
  });
}
