/** The options of step kind `sql` (sql-step.ts), checked together. */
import { z } from 'zod';

const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);

export const sqlStepOptions = z
  .strictObject({
    file: z
      .string()
      .regex(/\.sql$/, 'must name a .sql file')
      .describe('SQL file, relative to the sql folder'),
    params: z
      .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), scalar)
      .default({})
      .describe('Values bound to $name in the SQL'),
    outputs: z
      .array(z.string().regex(/^[a-z][a-z0-9_]*$/, 'must be lower snake_case'))
      .min(1, 'name at least one table the file creates')
      .describe(
        'Tables (or views) the file creates that are kept (as derived/<name>/data.parquet)',
      ),
    partition_by: z
      .string()
      .regex(/^[a-z][a-z0-9_]*$/, 'must be a lower snake_case column name')
      .optional()
      .describe(
        'Keep each output as partitions of this column (derived/<name>/<column>=<value>/data.parquet)',
      ),
    counts: z
      .record(
        z.string().regex(/^[a-z][a-z0-9_]*$/, 'must be a lower snake_case name'),
        z.string().min(1),
      )
      .optional()
      .describe(
        "Figures the run's summary line gives (under counts): name -> SQL aggregate over the rows this build wrote to the first output, e.g. faulty_location_days: \"count(*) FILTER (WHERE status = 'faulty')\"",
      ),
    incremental: z
      .strictObject({
        from: z
          .string()
          .regex(/^[a-z][a-z0-9_]*$/, 'must be a dataset name')
          .describe('The partitioned dataset whose new or rewritten partitions are built upon'),
        touches: z
          .string()
          .min(1)
          .optional()
          .describe(
            "SQL over a partition of `from` (its partition column): the list of output partitions it feeds, e.g. '[date, date + 1]' (with partition_by)",
          ),
        reads: z
          .union([
            z.string().min(1),
            z.record(
              z.string().regex(/^[a-z][a-z0-9_]*$/, 'must be a dataset name'),
              z.string().min(1),
            ),
          ])
          .optional()
          .describe(
            "SQL over a partition to build (the partition_by column): the list of partitions of `from` the file reads to build it, e.g. 'list_transform(range(-35, 1), k -> local_date + k)'; or, per partitioned dataset the file reads (`from` or another), such a list of its partitions: { dataset: SQL }. The file's view of each then holds only those (a night reads the files of its window, not of the whole history), and getvariable('partitions_of_<dataset>') lists every partition the dataset has; without: all of them",
          ),
        fold: z
          .string()
          .regex(/\.sql$/, 'must name a .sql file')
          .optional()
          .describe(
            "SQL file (in the sql folder) that makes the outputs from their previous selves (views previous_<name>) and the partitions of `from` added or rewritten since, at or after the last one built on (getvariable('partitions')); for outputs kept whole (without partition_by). Any other change builds with `file`",
          ),
        rebuild_on: z
          .array(z.string().regex(/^[a-z][a-z0-9_]*$/, 'must be a dataset name'))
          .default([])
          .describe('Datasets whose any change builds everything with `file`'),
      })
      .optional()
      .describe(
        "Build only what changed partitions of `from` touch: with partition_by and touches, the output partitions they feed (the file reads them as getvariable('partitions'); unset: build all); without partition_by, with fold",
      ),
  })
  .superRefine((o, ctx) => {
    const incremental = o.incremental;
    if (!incremental) return;
    if (o.partition_by !== undefined && incremental.touches === undefined)
      ctx.addIssue({
        code: 'custom',
        message:
          'with partition_by, incremental needs touches: the output partitions a changed partition feeds',
        path: ['incremental', 'touches'],
      });
    if (o.partition_by === undefined && incremental.fold === undefined)
      ctx.addIssue({
        code: 'custom',
        message: 'incremental needs partition_by (and touches) or, for outputs kept whole, fold',
        path: ['incremental'],
      });
    if (incremental.reads !== undefined && incremental.touches === undefined)
      ctx.addIssue({
        code: 'custom',
        message:
          'reads goes with partition_by and touches: the partitions of `from` a partition built reads',
        path: ['incremental', 'reads'],
      });
    if (o.partition_by !== undefined && incremental.fold !== undefined)
      ctx.addIssue({
        code: 'custom',
        message: 'fold is for outputs kept whole: not with partition_by',
        path: ['incremental', 'fold'],
      });
  });

export type SqlStepOptions = z.output<typeof sqlStepOptions>;
