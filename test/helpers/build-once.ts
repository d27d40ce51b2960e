/** The build-once lock lives with the release tooling, which builds the same images (tools/release/build-once.ts). */
export { buildOnce, exists } from '../../tools/release/build-once.js';
