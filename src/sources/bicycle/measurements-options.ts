/**
 * Options of the `bicycle.measurements` step kind, and the selection they make.
 */
import { resolve } from 'node:path';
import { z } from 'zod';
import { InputError } from '../../errors.js';
import { MIN_PREFIX_LENGTH, readPolygon, type SelectionSpec } from './selection.js';
import type { SizeGuesses } from './sizing.js';
import { HOUR_MS, parseSecondTimestamp } from '../../util/time.js';
import { requestOptions, textList } from '../../http/options.js';

const hourTimestamp = z
  .string()
  .refine((t) => parseSecondTimestamp(t) !== undefined, {
    message: 'must be a UTC timestamp like 2024-03-01T00:00:00Z (local times are refused)',
  })
  .refine((t) => (parseSecondTimestamp(t) ?? 0) % HOUR_MS === 0, {
    message: 'must be a whole hour (minutes and seconds 00), like 2024-03-01T05:00:00Z',
  });

export const bicycleMeasurementsOptions = z
  .strictObject({
    start: hourTimestamp
      .nullish()
      .describe(
        "Start of the period (UTC, whole hour, included). Unset: where the folder's data of the selection ends, so that missed nights are caught up; a folder without data needs it.",
      ),
    end: hourTimestamp
      .nullish()
      .describe('End of the period (UTC, whole hour, excluded). Unset: the last whole hour.'),
    lookback_days: z
      .number()
      .int()
      .min(0)
      .max(31)
      .default(7)
      .describe(
        'Also ask for the location-hours missing in these days before the start, which counters that upload late deliver days after the hour. 0 turns it off. Default 7.',
      ),
    locations: textList
      .nullish()
      .describe('Location ids (a list, or a comma-separated text). One selection is required.'),
    prefixes: textList
      .nullish()
      .describe(`Location id prefixes, each at least ${MIN_PREFIX_LENGTH} characters.`),
    polygon: z
      .string()
      .min(1)
      .nullish()
      .describe(
        'Path of a GeoJSON file: a Polygon, a Feature with one, or a FeatureCollection of one such Feature.',
      ),
    server_side: z
      .boolean()
      .default(false)
      .describe(
        'Send prefixes or the polygon to the service as given (4.2, 4.3) instead of resolving them against the catalog; falls back to id batches when the service answers too many locations. Default false.',
      ),
    concurrency: z
      .number()
      .int()
      .min(1)
      .max(32)
      .default(4)
      .describe('Requests in flight at once. Default 4.'),
    locations_per_request: z
      .number()
      .int()
      .min(1)
      .default(100)
      .describe(
        'First guess of the locations one request may name; refusals and successes adjust it, and what is learned is kept for later runs. Default 100.',
      ),
    window_days: z
      .number()
      .int()
      .min(1)
      .default(31)
      .describe(
        'First guess of the longest period one request may cover, in days; learned like locations_per_request. Default 31.',
      ),
    max_count: z
      .number()
      .int()
      .min(1)
      .default(20_000)
      .describe(
        'The most passages a location can count in an hour: a value above it is set apart as implausible (NULL, the reason kept, the row copied to bicycle/quarantine) and its day judged faulty. The busiest counted cycle path of the Netherlands (Vredenburg, Utrecht) has about 4,000 in its busiest hour. Default 20000.',
      ),
    ...requestOptions(120_000),
  })
  .superRefine((options, ctx) => {
    const given = (['locations', 'prefixes', 'polygon'] as const).filter(
      (key) => options[key] !== undefined && options[key] !== null,
    );
    if (given.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        path: given.length > 1 ? [given[1]!] : [],
        message:
          given.length === 0
            ? 'needs one selection: locations, prefixes or polygon'
            : `give one selection only, not ${given.join(' and ')}`,
      });
    }
    if (options.locations?.length === 0)
      ctx.addIssue({ code: 'custom', path: ['locations'], message: 'must name a location' });
    if (options.prefixes?.length === 0)
      ctx.addIssue({ code: 'custom', path: ['prefixes'], message: 'must name a prefix' });
    options.prefixes?.forEach((prefix, i) => {
      if (prefix.length < MIN_PREFIX_LENGTH) {
        ctx.addIssue({
          code: 'custom',
          path: ['prefixes', i],
          message: `a prefix has at least ${MIN_PREFIX_LENGTH} characters, got "${prefix}"`,
        });
      }
    });
    if (options.server_side && options.locations)
      ctx.addIssue({
        code: 'custom',
        path: ['server_side'],
        message: 'applies to prefixes and polygon only',
      });
    const start = options.start ? parseSecondTimestamp(options.start) : undefined;
    const end = options.end ? parseSecondTimestamp(options.end) : undefined;
    if (start !== undefined && end !== undefined && end <= start)
      ctx.addIssue({
        code: 'custom',
        path: ['end'],
        message: `must be after start (${options.start}), got ${options.end}`,
      });
    if (start !== undefined && start >= Date.now())
      ctx.addIssue({
        code: 'custom',
        path: ['start'],
        message: `is in the future (${options.start}): there are no measurements yet`,
      });
  });

export type BicycleMeasurementsOptions = z.output<typeof bicycleMeasurementsOptions>;

/** The selection of the options (the polygon read from its file). */
export async function selectionSpec(options: BicycleMeasurementsOptions): Promise<SelectionSpec> {
  if (options.locations) return { mode: 'locations', ids: [...new Set(options.locations)] };
  if (options.prefixes) return { mode: 'prefixes', prefixes: [...new Set(options.prefixes)] };
  const file = options.polygon!;
  const read = await readPolygon(resolve(file));
  if ('problems' in read) throw new InputError(`polygon ${file}: ${read.problems.join('; ')}`);
  return { mode: 'polygon', file, polygons: read.polygons, crs: read.crs };
}

/** First guesses of the request sizes. */
export function sizeGuesses(options: BicycleMeasurementsOptions): SizeGuesses {
  return { locations: options.locations_per_request, hours: options.window_days * 24 };
}
