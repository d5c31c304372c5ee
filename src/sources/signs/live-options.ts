/**
 * The options of a `signs.live` step (today's API, v5 or v4, or NDW's daily
 * bulk file), the request they make, and the download itself.
 */
import { z } from 'zod';
import type { HttpClient } from '../../http/client.js';
import { requestOptions, textList } from '../../http/options.js';
import type { Upstream } from '../context.js';
import { fetchBulkFile } from './bulk.js';
import { TOWN_CODE, TOWN_CODE_HELP, downloadLive, liveUrl } from './client.js';

export const signsLiveOptions = z
  .strictObject({
    api: z.enum(['v5', 'v4']).default('v5').describe('API version: v5 (default) or v4'),
    format: z
      .enum(['geojson', 'csv'])
      .default('geojson')
      .describe('GeoJSON (default), or CSV (v4 only); gzip-compressed on the wire'),
    county_code: z
      .string()
      .regex(TOWN_CODE, TOWN_CODE_HELP)
      .nullish()
      .describe('Only signs of this municipality (countyCode, e.g. GM0363)'),
    rvv_codes: textList
      .nullish()
      .describe('Only signs with these RVV codes (a list, or a comma-separated text)'),
    road_section_ids: z
      .array(z.number().int().nonnegative())
      .nullish()
      .describe('Only signs on these road sections (NWB ids)'),
    status: z
      .enum(['PLANNED', 'PLACED', 'REMOVED'])
      .nullish()
      .describe('Only signs with this status (PLANNED, PLACED or REMOVED)'),
    file: z
      .string()
      .min(1)
      .nullish()
      .describe(
        "NDW's daily bulk file of the current state instead of the API: an http(s) URL or a local path, gzip or not, in the v4 CSV layout (api v4, format csv) or GeoJSON",
      ),
    max_gone: z
      .number()
      .min(0)
      .max(1)
      .nullish()
      .describe(
        "The largest share of the last snapshot's signs that a new answer may leave out before it is taken for upstream trouble (retried, then exit 1; nothing lands). Unset: judged by what the days since the last snapshot remove at the folder's own daily rate (at least 1% a day). 1 lets any answer through, an empty one too.",
      ),
    max_stripped: z
      .number()
      .min(0)
      .max(1)
      .nullish()
      .describe(
        'The largest share of signs that may lose a property most signs of the last snapshot had, before the answer is taken for upstream trouble. Unset: judged like max_gone. 1 lets any answer through.',
      ),
    ...requestOptions(600_000),
  })
  .superRefine((options, ctx) => {
    if (options.file) {
      const filters = (['county_code', 'rvv_codes', 'road_section_ids', 'status'] as const).filter(
        (f) => options[f] !== undefined && options[f] !== null,
      );
      for (const filter of filters)
        ctx.addIssue({
          code: 'custom',
          path: [filter],
          message: 'a bulk file holds the whole country: filters apply to the API only',
        });
    }
    if (options.format === 'csv' && options.api !== 'v4')
      ctx.addIssue({
        code: 'custom',
        path: ['format'],
        message: 'v5 serves GeoJSON only: use format geojson, or api v4 for CSV',
      });
  });

export type SignsLiveOptions = z.output<typeof signsLiveOptions>;

/** What a download asks for, in words: the snapshots of one history are all taken so. */
export function liveRequest(options: SignsLiveOptions): string {
  const filters = [
    options.county_code && `countyCode ${options.county_code}`,
    options.rvv_codes && `rvvCode ${options.rvv_codes.join(', ')}`,
    options.road_section_ids && `${options.road_section_ids.length} road sections`,
    options.status && `status ${options.status}`,
  ].filter(Boolean);
  if (options.file) return `the ${options.api} current state from the bulk file ${options.file}`;
  return `the ${options.api} current state${filters.length ? ` (${filters.join(', ')})` : ''}`;
}

/** The host of the version asked for. */
export function liveBase(
  options: SignsLiveOptions,
  upstream: Upstream['signs'],
): string | undefined {
  // A bulk file is not the API: there is no upstream to identify.
  if (options.file) return undefined;
  return upstream && (options.api === 'v5' ? upstream.v5Url : upstream.url);
}

/** Where the current state comes from, for messages: the API's URL, or the bulk file. */
export function liveEndpoint(options: SignsLiveOptions, upstream: Upstream['signs']): string {
  if (options.file) return options.file;
  const base = liveBase(options, upstream);
  if (base === undefined) return `the ${options.api} current state`;
  return liveUrl({
    api: options.api,
    base,
    format: options.format,
    countyCode: options.county_code ?? undefined,
    rvvCodes: options.rvv_codes ?? undefined,
    roadSectionIds: options.road_section_ids ?? undefined,
    status: options.status ?? undefined,
  });
}

/** The options that shape the answer: only the same request may skip the download. */
export function liveRequestKey(options: SignsLiveOptions): unknown[] {
  return [
    options.api,
    options.format,
    ...(options.file ? [options.file] : []),
    options.county_code,
    options.rvv_codes,
    options.road_section_ids,
    options.status,
  ];
}

/** The current state from the API (v4 or v5) or from NDW's daily file, into `file`. */
export async function fetchCurrentState(
  options: SignsLiveOptions,
  upstream: Upstream['signs'],
  {
    http,
    file,
    since,
    signal,
  }: { http: HttpClient; file: string; since: string | undefined; signal: AbortSignal },
): Promise<{ headers: Readonly<Record<string, unknown>>; notModified: boolean }> {
  if (options.file) {
    const bulk = await fetchBulkFile(http, options.file, file, {
      ifModifiedSince: since,
      signal,
    });
    return {
      headers: bulk.lastModified ? { 'last-modified': bulk.lastModified } : {},
      notModified: bulk.notModified,
    };
  }
  return downloadLive(
    http,
    {
      api: options.api,
      base: liveBase(options, upstream)!,
      format: options.format,
      countyCode: options.county_code ?? undefined,
      rvvCodes: options.rvv_codes ?? undefined,
      roadSectionIds: options.road_section_ids ?? undefined,
      status: options.status ?? undefined,
      ifModifiedSince: since,
      signal,
    },
    file,
  );
}
