#!/usr/bin/env node
/**
 * Regenerates the annotation references in docs/providers/ from the schemas
 * the providers publish (GetProviderSchema), rendered as the kit's
 * --render-schema renders them: the local cloud's, and the bridged AWS
 * provider's (built from plugins/aws-bridge on first use, cached under
 * ~/.cache/ccm-host). Tests render the same targets and compare
 * (test/unit/docs/annotation-references.test.ts,
 * test/integration/providers/aws-bridge.test.ts).
 *
 *   npm run docs:annotations            # both
 *   npm run docs:annotations -- local   # only the named ones
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TargetSpec } from '../conformance/kit.js';
import { fetchSchema, renderSchemaMarkdown } from '../conformance/schema-doc.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

/** One committed reference: its file and how to start its provider (given a scratch directory). */
export interface AnnotationReference {
  name: string;
  file: string;
  target(dir: string, executable: string): Promise<TargetSpec>;
}

/**
 * The AWS provider builds its cloud from CLOUD_CONFIG before the handshake;
 * these keys keep it from asking the instance metadata service, and the
 * closed proxy keeps any AWS call on this machine (GetProviderSchema makes
 * none).
 */
const AWS_OFFLINE_CONFIG = '[Global]\nZone=us-east-1a\nRegion=us-east-1\nVPC=vpc-0\nSubnetID=subnet-0\nKubernetesClusterID=annotation-docs\n';

export const ANNOTATION_REFERENCES: readonly AnnotationReference[] = [
  {
    name: 'local',
    file: join(REPO, 'docs', 'providers', 'local-annotations.md'),
    target: async (_dir, executable) => ({ kind: 'exec', path: executable, env: ['LOCALCLOUD_ALLOW_SIMULATION=true'] }),
  },
  {
    name: 'aws',
    file: join(REPO, 'docs', 'providers', 'aws-annotations.md'),
    target: async (dir, executable) => {
      const config = join(dir, 'aws-cloud.conf');
      await writeFile(config, AWS_OFFLINE_CONFIG);
      const env = [`CLOUD_CONFIG=${config}`, 'AWS_EC2_METADATA_DISABLED=true', 'HTTPS_PROXY=http://127.0.0.1:9', 'HTTP_PROXY=http://127.0.0.1:9'];
      return { kind: 'exec', path: executable, env };
    },
  },
];

/** The reference `ref` renders from the provider at `executable`. */
export async function renderReference(ref: AnnotationReference, executable: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-annotation-docs-'));
  try {
    return renderSchemaMarkdown(await fetchSchema(await ref.target(dir, executable), 60_000));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Where each provider's executable comes from (the AWS one is built through the tests' cached Go build). */
async function executable(name: string): Promise<string> {
  if (name === 'local') return join(REPO, 'dist', 'plugins', 'local', 'main.js');
  const { awsCloudBinary } = await import('../test/helpers/providers.js');
  return awsCloudBinary((line) => process.stderr.write(`${line}\n`));
}

async function main(): Promise<void> {
  const only = process.argv.slice(2);
  for (const ref of ANNOTATION_REFERENCES) {
    if (only.length && !only.includes(ref.name)) continue;
    await writeFile(ref.file, await renderReference(ref, await executable(ref.name)));
    process.stdout.write(`wrote ${ref.file}\n`);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err: unknown) => {
    process.stderr.write(`annotation-docs: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
