// ESLint, flat config: typescript-eslint's recommended rules over src/ and test/, formatting left
// to Prettier (eslint-config-prettier switches off the rules that would fight it).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'examples/**/*.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        URL: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        structuredClone: 'readonly',
        queueMicrotask: 'readonly',
        performance: 'readonly',
        fetch: 'readonly',
        globalThis: 'readonly',
      },
    },
    rules: {
      // Record types and zod inference use `any` on purpose at a few boundaries (StageDefinition<any>).
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      // `#private` fields everywhere (HELPERS.md); TypeScript `private` only where a parameter property needs it.
      'no-restricted-syntax': [
        'error',
        { selector: "PropertyDefinition[accessibility='private']", message: 'Use a #private field.' },
        {
          selector: "MethodDefinition[accessibility='private'][kind!='constructor']",
          message: 'Use a #private method.',
        },
      ],
    },
  },
  {
    // Orchestration split into named steps reads top-down; a function past this size hides its concerns.
    files: ['src/**'],
    rules: {
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    files: ['test/**'],
    rules: {
      // Tests end pipelines in generators that only consume, and feed numbers past 2^53 and control bytes on purpose.
      'require-yield': 'off',
      'no-loss-of-precision': 'off',
      'no-control-regex': 'off',
    },
  },
  prettier,
);
