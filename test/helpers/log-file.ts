/**
 * A log file for an in-process test host: every line is written to the file
 * descriptor before the logger call returns, so a test that times out (and
 * its worker that exits) leaves the complete log behind.
 */
import { openSync, writeSync } from 'node:fs';
import { Writable } from 'node:stream';

/** Appends to `path`, synchronously. The descriptor lives as long as the test worker. */
export function logFile(path: string): Writable {
  const fd = openSync(path, 'a');
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      try {
        writeSync(fd, chunk);
        done();
      } catch (err) {
        done(err as Error);
      }
    },
  });
}
