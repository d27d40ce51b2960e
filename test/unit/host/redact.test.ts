/** Secret tracking and redaction: logs, plugin error messages, config and env sources. */
import test from 'ava';
import { Writable } from 'node:stream';
import { createLogger } from '../../../host/log.js';
import { decodedToCloudError } from '../../../host/plugin/connection.js';
import { REDACTED, redact, registerCloudConfigSecrets, registerEnvSecrets, registerSecret } from '../../../host/redact.js';

test('registered secrets are replaced, short values are not tracked', (t) => {
  registerSecret('s3cr3t-value-one');
  registerSecret('abc');
  t.is(redact('token=s3cr3t-value-one; abc'), `token=${REDACTED}; abc`);
});

test('secret-named keys of a JSON cloud config, at any depth, are secrets; others are not', (t) => {
  registerCloudConfigSecrets(Buffer.from(JSON.stringify({ zone: 'zone-visible', auth: { user: 'user-visible-not-secret?', password: 'pw-hidden-123' }, apiKey: 'key-hidden-456', tokens: ['list-hidden-789'] })));
  t.is(redact('pw-hidden-123 key-hidden-456 list-hidden-789 zone-visible'), `${REDACTED} ${REDACTED} ${REDACTED} zone-visible`);
  t.notThrows(() => registerCloudConfigSecrets(Buffer.from('not json at all')));
});

test('secret-named --plugin-env values are secrets', (t) => {
  registerEnvSecrets({ AWS_SECRET_ACCESS_KEY: 'aws-hidden-000', LOCALCLOUD_STATE_DIR: '/var/lib/visible' });
  t.is(redact('aws-hidden-000 /var/lib/visible'), `${REDACTED} /var/lib/visible`);
});

test('log lines lose secrets whatever field holds them, also JSON-escaped', (t) => {
  registerSecret('quote"secret\\x');
  let out = '';
  const log = createLogger({ destination: new Writable({ write(c, _e, cb) { out += String(c); cb(); } }) as never });
  log.info({ err: 'call failed: s3cr3t-value-one', nested: { v: 'quote"secret\\x' } }, 'something failed');
  t.false(out.includes('s3cr3t-value-one'));
  t.false(out.includes('quote\\"secret'));
  t.true(out.includes(REDACTED));
});

test('plugin error messages are redacted before they become host errors', (t) => {
  const err = decodedToCloudError('InstanceMetadata', { code: 13, message: 'auth failed with key s3cr3t-value-one' } as never);
  t.false(err.message.includes('s3cr3t-value-one'));
  t.regex(err.message, /\[redacted\]/);
});
