/** The JSON Schema of pipeline definitions, for editors: generated from the zod schemas, one branch per step kind. */
import { z } from 'zod';
import { definitionSchema, stepSchema } from '../config/schema.js';
import { STEP_KINDS } from '../steps/registry.js';

export function definitionJsonSchema(): Record<string, unknown> {
  const steps = [...STEP_KINDS.values()].map((kind) =>
    stepSchema.extend({
      kind: z.literal(kind.kind).describe(kind.description),
      options: (kind.options as z.ZodType).describe(`Options of a ${kind.kind} step`),
    }),
  );
  const schema = definitionSchema.extend({
    steps: z.array(z.union(steps as unknown as [z.ZodType, z.ZodType, ...z.ZodType[]])).min(1),
  });
  return {
    $id: 'https://road-etl.invalid/pipeline.schema.json',
    title: 'road-etl pipeline definition',
    ...z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }),
  };
}
