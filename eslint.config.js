// ESLint for the TypeScript sources (generated code excluded): typescript-eslint's recommended rules plus the
// type-aware promise checks; formatting is Prettier's job (.prettierrc.json), not ESLint's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      // Build output: the tree's, and the packed SDK's and kit's (sdk/dist, conformance/dist).
      '**/dist/**',
      'node_modules/**',
      'proto/gen/**',
      'plugins/go/**',
      'plugins/python/**',
      '.localcluster/**',
      'tools/upstream-ccm/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
    },
  },
);
