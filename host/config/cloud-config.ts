/**
 * Reads the --cloud-config file, bounded: the host holds it for its whole
 * life and sends it in every Configure call, whose gRPC message a provider
 * accepts only up to 4 MiB by default.
 */
import { open } from 'node:fs/promises';
import { HostStartError } from '../errors.js';
import { errorMessage } from '../log.js';
import { fsErrorReason } from './validate.js';

/** Largest --cloud-config the host accepts (docs/flags.md). */
export const MAX_CLOUD_CONFIG_BYTES = 1024 * 1024;

/** Options of readCloudConfig. */
export interface ReadCloudConfigOptions {
  /** `--cloud-config-optional`: a file that does not exist is not an error (the result is undefined). */
  optional?: boolean;
  maxBytes?: number;
}

/**
 * The bytes of the --cloud-config file at `path`, or undefined when it does
 * not exist and `optional` is set. Throws HostStartError naming the flag when
 * it cannot be read or is larger than `maxBytes`; never reads more than
 * `maxBytes` + 1 bytes.
 */
export async function readCloudConfig(path: string, opts: ReadCloudConfigOptions = {}): Promise<Buffer | undefined> {
  const maxBytes = opts.maxBytes ?? MAX_CLOUD_CONFIG_BYTES;
  let file;
  try {
    file = await open(path, 'r');
  } catch (err) {
    if (opts.optional && (err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new HostStartError(`cannot read --cloud-config ${path}: ${fsErrorReason(err)}: pass the path of a readable file`);
  }
  try {
    const buf = Buffer.alloc(maxBytes + 1);
    let size = 0;
    for (let n = -1; n !== 0 && size < buf.length; size += n) n = (await file.read(buf, size, buf.length - size, size)).bytesRead;
    if (size > maxBytes) {
      throw new HostStartError(
        `--cloud-config ${path} is larger than ${maxBytes} bytes, the limit: pass only the provider's settings (keep certificates and other bulky data in files the provider reads itself)`,
      );
    }
    return Buffer.from(buf.subarray(0, size));
  } catch (err) {
    if (err instanceof HostStartError) throw err;
    throw new HostStartError(`cannot read --cloud-config ${path}: ${errorMessage(err)}`);
  } finally {
    await file.close();
  }
}
