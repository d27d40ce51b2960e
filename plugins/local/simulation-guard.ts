/**
 * The local cloud is a simulation: its instances are records in a state
 * directory and its load balancers are loopback addresses of the machine it
 * runs on. Started against a real cluster by mistake (a manifest left at its
 * default, a typo in --cloud-provider), it would answer for every Node and
 * LoadBalancer Service with made-up data. So the provider executable refuses
 * to start unless its environment says explicitly that a simulation is meant:
 * the tests, `npm start` (demo/) and deploy/overlays/local-demo-* set it.
 */

/** The variable that allows the simulation; its value must be `true`. */
export const ALLOW_SIMULATION_ENV = 'LOCALCLOUD_ALLOW_SIMULATION';

/**
 * Undefined when `env` allows the simulation; otherwise the one line to
 * print before exiting: what this is and how to allow it.
 */
export function simulationRefusal(env: NodeJS.ProcessEnv): string | undefined {
  if (env[ALLOW_SIMULATION_ENV] === 'true') return undefined;
  return (
    `refusing to start: the local cloud is a simulation for tests and demos (fake instances, load balancers on this machine's loopback addresses), ` +
    `not a real cloud; set ${ALLOW_SIMULATION_ENV}=true to run it anyway ` +
    `(host in exec mode: --plugin-env=${ALLOW_SIMULATION_ENV}=true; sidecar: the provider container's env)`
  );
}
