import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { definitionJsonSchema } from '../../src/pipeline/json-schema.js';
import { STEP_KINDS } from '../../src/steps/registry.js';
import { ROOT } from '../helpers/cli.js';

describe('the JSON Schema of definitions', () => {
  it('is committed as pipelines/schema.json and up to date (npm run schema)', async () => {
    const committed = JSON.parse(
      await readFile(join(ROOT, 'pipelines', 'schema.json'), 'utf8'),
    ) as unknown;
    expect(committed).toEqual(JSON.parse(JSON.stringify(definitionJsonSchema())));
  });

  it('has a branch per step kind, refusing unknown keys', () => {
    const schema = definitionJsonSchema() as {
      properties: {
        steps: {
          items: {
            anyOf: { properties: { kind: { const: string } }; additionalProperties?: boolean }[];
          };
        };
      };
    };
    const branches = schema.properties.steps.items.anyOf;
    expect(branches.map((b) => b.properties.kind.const).sort()).toEqual(
      [...STEP_KINDS.keys()].sort(),
    );
    expect(branches.every((b) => b.additionalProperties === false)).toBe(true);
  });
});
