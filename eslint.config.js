// @ts-check
import js from '@eslint/js';
import vitest from '@vitest/eslint-plugin';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

/** A layer's files (but `ignores`) may not import the named folders of src/. */
function layer(files, forbidden, ignores = []) {
  return [
    {
      files,
      ignores,
      rules: {
        'no-restricted-imports': [
          'error',
          {
            patterns: [
              {
                regex: `(^|/)(${forbidden.join('|')})/`,
                message: `${files.join(', ')} may not import ${forbidden.join(', ')}: imports go down the layers (cli -> pipeline -> steps, report -> sources, sinks, duckdb, http -> util).`,
              },
            ],
          },
        ],
      },
    },
  ];
}

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'output/**',
      'coverage/**',
      'bench/.data/**',
      '.scratch/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true, allowNullish: true },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
      // tsc is the judge of casts (yargs builders need some that this rule misreads).
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      '@typescript-eslint/no-confusing-void-expression': [
        'error',
        { ignoreArrowShorthand: true, ignoreVoidReturningFunctions: true },
      ],
    },
  },
  {
    files: ['bin/**/*.js', 'bench/**/*.js', 'eslint.config.js', 'rolldown.config.js'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        performance: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
      },
    },
  },
  {
    // The size of rooms, as a smell: a file is one role, read whole; a function at a glance.
    files: ['src/**/*.ts'],
    rules: {
      'max-lines': ['warn', 400],
      'max-lines-per-function': ['warn', 80],
    },
  },
  // Layers: cli -> pipeline -> steps, report -> sources / sinks / duckdb / http -> util. A layer
  // imports only those below it; util imports nothing of road-etl.
  ...layer(['src/pipeline/**'], ['cli']),
  ...layer(['src/report/**'], ['cli', 'pipeline', 'steps', 'sources', 'sinks']),
  ...layer(['src/steps/**'], ['cli', 'pipeline', 'report']),
  ...layer(['src/sources/**'], ['cli', 'pipeline', 'steps', 'sinks', 'report', 'store']),
  ...layer(['src/sinks/**'], ['cli', 'pipeline', 'steps', 'sources', 'report', 'store']),
  // The storage seam: the local folder, S3 and Azure Blob, their locks and the commit. It knows
  // nothing of the engine; the engine and the commands wire it. (duckdb/damaged.ts and the steps
  // named below still ask it whether a file is fetched yet: the fetch on demand, to go.)
  ...layer(['src/store/**'], ['cli', 'pipeline', 'steps', 'sources', 'sinks', 'report']),
  ...layer(
    ['src/http/**', 'src/duckdb/**', 'src/config/**'],
    ['cli', 'pipeline', 'steps', 'sources', 'sinks', 'report', 'store'],
    ['src/duckdb/damaged.ts'],
  ),
  ...layer(
    [
      'src/errors.ts',
      'src/log.ts',
      'src/progress.ts',
      'src/layout.ts',
      'src/version.ts',
      'src/endpoints.ts',
    ],
    ['cli', 'pipeline', 'steps', 'sources', 'sinks', 'report', 'http', 'duckdb', 'config'],
  ),
  {
    // No circle of imports between the files of src/ (a module's imports are read before it).
    files: ['src/**/*.ts'],
    ignores: ['src/report/page/**'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/resolver-next': [createNodeResolver({ extensionAlias: { '.js': ['.ts', '.js'] } })],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/extensions': ['.ts', '.js'],
    },
    rules: { 'import-x/no-cycle': ['error', { ignoreExternal: true }] },
  },
  {
    files: ['src/util/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^\\.\\./', message: 'util/ imports nothing of road-etl.' }] },
      ],
    },
  },
  {
    // Step kinds never import each other: the registry alone knows them all.
    files: ['src/steps/**'],
    ignores: [
      'src/steps/registry.ts',
      'src/steps/export-file.ts',
      'src/steps/export-months.ts',
      'src/steps/sql-reads.ts',
      'src/steps/sql-run.ts',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(^|/)(cli|pipeline|store)/',
              message: 'steps/ imports nothing of pipeline/, cli/ or store/.',
            },
            {
              regex: '^\\./[^/]+-step\\.js$',
              message:
                'A step kind does not import another; share through sources/ or a helper of steps/.',
            },
          ],
        },
      ],
    },
  },
  {
    // The report page's scripts share one global scope: what one declares, another uses.
    files: ['src/report/page/**/*.ts'],
    languageOptions: { sourceType: 'script' },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { vars: 'local', argsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['test/**/*.ts'],
    plugins: { vitest },
    rules: {
      ...vitest.configs.recommended.rules,
      'vitest/valid-expect': ['error', { maxArgs: 2 }],
      '@typescript-eslint/no-floating-promises': 'off',
    },
  },
);
