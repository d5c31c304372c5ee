/**
 * The schema of a pipeline definition (pipelines/*.yaml). Descriptions and
 * defaults live here; the JSON Schema for editors is generated from it.
 */
import { z } from 'zod';
import {
  DEFAULT_BUDGET_SHARE,
  DUCKDB_SHARE,
  MEMORY_PER_THREAD,
  MIN_BUDGET,
  parseSize,
  SIZE_HELP,
} from '../duckdb/memory.js';
import { tileTemplateProblem } from '../util/geo.js';
import { PARAM_TYPES } from './params.js';

export const identifierPattern = /^[a-z][a-z0-9_]*$/;

const identifier = z
  .string()
  .regex(identifierPattern, 'must be lower snake_case (a-z, 0-9, _), starting with a letter');

export const paramSpecSchema = z.strictObject({
  type: z.enum(PARAM_TYPES).describe('Type of the value; timestamps are UTC YYYY-MM-DDTHH:mm:ssZ'),
  required: z
    .boolean()
    .default(false)
    .describe('A run without this param is refused (exit 2). Default false.'),
  default: z
    .union([z.string(), z.number(), z.boolean(), z.array(z.string()), z.null()])
    .optional()
    .describe('Value when the param is not given. Without one, an optional param is null.'),
  values: z
    .array(z.string())
    .min(1)
    .optional()
    .describe('The values allowed (a string param); anything else is refused (exit 2)'),
  description: z.string().optional().describe('What the param means, shown by validate'),
});

const simulatorSourceSchema = z.strictObject({
  seed: z.number().int().default(1).describe('Seed of the simulated data. Default 1.'),
  scale: z
    .enum(['small', 'default', 'large', 'national'])
    .default('default')
    .describe('Size of the simulated world'),
  now: z
    .string()
    .refine(
      (v) => !Number.isNaN(Date.parse(v)),
      'must be a UTC ISO timestamp, like 2026-11-14T12:00:00Z',
    )
    .optional()
    .describe("The simulator's clock (UTC ISO); default: the end of its feed"),
  signs: z.number().int().positive().optional().describe('Number of distinct signs'),
  locations: z
    .number()
    .int()
    .positive()
    .optional()
    .describe('Number of bicycle counting locations'),
});

const sourceSchema = z.strictObject({
  simulator: z
    .union([z.literal('embedded'), simulatorSourceSchema])
    .optional()
    .describe('Start the simulated upstream in-process for the run instead of using bicycle/signs'),
  bicycle: z
    .strictObject({
      url: z.string().describe('Base URL of the bicycle API, usually ${env.ROAD_ETL_BICYCLE_URL}'),
      auth_url: z.string().describe('Full token URL, usually ${env.ROAD_ETL_AUTH_URL}'),
      username: z.string().describe('Service account, usually ${env.ROAD_ETL_USERNAME}'),
      password: z.string().describe('Its password, usually ${env.ROAD_ETL_PASSWORD}'),
      client_id: z
        .string()
        .optional()
        .describe(
          "OAuth client id. Default: ROAD_ETL_CLIENT_ID when set, else dexter (the client NDW's token service knows).",
        ),
    })
    .optional()
    .describe('The OAuth-protected bicycle API'),
  signs: z
    .strictObject({
      url: z
        .string()
        .describe(
          'Base URL of the traffic-sign API (v1, v4), usually ${env.ROAD_ETL_SIGNS_URL}; NDW: https://data.ndw.nu',
        ),
      v5_url: z
        .string()
        .optional()
        .describe(
          'Base URL of the v5 current state, usually ${env.ROAD_ETL_SIGNS_V5_URL}; NDW: https://wegkenmerken.ndw.nu. Default: url',
        ),
    })
    .optional()
    .describe('The public traffic-sign API'),
});

export const reportSchema = z.strictObject({
  map_signs: z
    .number()
    .int()
    .nonnegative()
    .default(10_000)
    .describe(
      'Signs drawn per map at most; beyond it a random sample, stated as such. Default 10000.',
    ),
  tiles: z
    .string()
    .superRefine((url, ctx) => {
      const problem = tileTemplateProblem(url);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .optional()
    .describe(
      "Tile URL template for the maps' background, like https://tile.openstreetmap.org/{z}/{x}/{y}.png: the page then loads tiles from it. Default none: the maps are drawn over country outlines inside the page, which needs no network.",
    ),
  tiles_attribution: z
    .string()
    .default('© OpenStreetMap contributors')
    .describe('Attribution shown on the maps with tiles'),
});

/** NDW's open data licence: CC0 1.0 (as data.overheid.nl names it). */
export const NDW_LICENSE = 'http://creativecommons.org/publicdomain/zero/1.0/deed.nl';

export const publicationSchema = z.strictObject({
  title: z
    .string()
    .optional()
    .describe(
      "Title of the extracts in exports/dataset.jsonld. Default: from the pipeline's description",
    ),
  description: z.string().optional().describe('What the extracts hold, for a data portal'),
  publisher: z
    .string()
    .optional()
    .describe('Who publishes the extracts (an organisation); a data portal asks for it'),
  publisher_uri: z.url().optional().describe("The publisher's URI (e.g. its OIN or TOOI URI)"),
  contact_email: z.email().optional().describe('Where questions about the extracts go'),
  license: z
    .url()
    .default(NDW_LICENSE)
    .describe("Licence of the extracts. Default: NDW's open data licence, CC0 1.0"),
  base_url: z
    .url()
    .optional()
    .describe(
      'Where the exports folder is published (https://example.org/road-data/): download URLs are made from it; without it they are relative to dataset.jsonld',
    ),
  identifier: z
    .url()
    .optional()
    .describe(
      "The dataset's identifier (a URI). Default: base_url's dataset.jsonld, else a urn:uuid made at the folder's first description and kept",
    ),
});

export const stepSchema = z.strictObject({
  id: identifier.describe(
    'Name of the step, unique in the pipeline (used by needs, --select, --reset)',
  ),
  kind: z
    .string()
    .describe(
      'What the step does: sql, export, signs.events, signs.snapshot, bicycle.locations, bicycle.measurements',
    ),
  description: z.string().optional(),
  needs: z.array(identifier).default([]).describe('Steps that must run before this one'),
  options: z
    .record(z.string(), z.unknown())
    .default({})
    .describe("The kind's options; may use ${params.x} and ${env.X}"),
});

export const definitionSchema = z.strictObject({
  name: identifier.describe('Name of the pipeline'),
  description: z.string().optional(),
  params: z
    .record(identifier, paramSpecSchema)
    .default({})
    .describe('Typed parameters, set with --param k=v'),
  source: sourceSchema.default({}).describe('Where the upstream is'),
  sql_dir: z
    .string()
    .default('../sql')
    .describe('Folder of the SQL files, relative to this file. Default ../sql.'),
  duckdb: z
    .strictObject({
      memory_limit: z
        .string()
        .refine((v) => parseSize(v) !== undefined, SIZE_HELP)
        .refine(
          (v) => (parseSize(v) ?? 0) >= MIN_BUDGET,
          `must be at least ${MIN_BUDGET / 2 ** 20}MiB`,
        )
        .optional()
        .describe(
          `Memory budget of the whole run, like 1GB or 4GiB: DuckDB gets ${DUCKDB_SHARE * 100}% of it and as many threads as that can feed (${MEMORY_PER_THREAD / 2 ** 20} MiB each), and spills to disk beyond it. Default: ${DEFAULT_BUDGET_SHARE * 100}% of the memory of the machine or its control group.`,
        ),
      threads: z
        .number()
        .int()
        .positive()
        .optional()
        .describe(
          'DuckDB threads at most. Default: the number of cores. Capped by the budget; a sql or export step runs on one per 16 MB it reads.',
        ),
    })
    .default({})
    .describe('DuckDB settings for SQL and export steps'),
  report: z
    .union([z.boolean(), reportSchema], {
      error: 'expected true, false, or settings (map_signs, tiles, tiles_attribution)',
    })
    .default(false)
    .describe(
      'Write report/index.html (the run, maps and charts of the output, in one file) at the end of every run: true, or its settings. Default false; `road-etl report` writes it at any time.',
    ),
  publication: publicationSchema
    .default({ license: NDW_LICENSE })
    .describe(
      'What exports/dataset.jsonld (DCAT-AP-NL 3.0) says of the extracts: title, publisher, contact, licence, where they are published',
    ),
  steps: z.array(stepSchema).min(1, 'a pipeline needs at least one step'),
});

export type SimulatorSource = z.output<typeof simulatorSourceSchema>;
export type Definition = z.output<typeof definitionSchema>;
export type ReportSpec = z.output<typeof reportSchema>;
export type Publication = z.output<typeof publicationSchema>;
