import test from 'ava';
import { Writable } from 'node:stream';
import { createProviderLogger, logLevelFromEnv } from '../../../sdk/log.js';
import { ENV_LOG_LEVEL } from '../../../sdk/protocol.js';

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      cb();
    },
  });
  return { lines, destination };
}

test('one JSON object per line with time, level label, name, msg and fields', (t) => {
  const { lines, destination } = capture();
  const log = createProviderLogger('local', { destination, level: 'info' });
  log.info({ node: 'n1', attempt: 2 }, 'instance created');
  log.debug({ hidden: true }, 'not at info');
  t.is(lines.length, 1);
  const obj = JSON.parse(lines[0]!) as Record<string, unknown>;
  t.like(obj, { level: 'info', name: 'local', msg: 'instance created', node: 'n1', attempt: 2 });
  t.false(Number.isNaN(Date.parse(String(obj.time))));
  t.false('pid' in obj || 'hostname' in obj);
});

test('level comes from CCM_PLUGIN_LOG_LEVEL, default info', (t) => {
  t.is(logLevelFromEnv({}), 'info');
  t.is(logLevelFromEnv({ [ENV_LOG_LEVEL]: 'debug' }), 'debug');
  t.is(logLevelFromEnv({ [ENV_LOG_LEVEL]: ' WARN ' }), 'warn');
  t.is(logLevelFromEnv({ [ENV_LOG_LEVEL]: 'verbose' }), 'info');
});
