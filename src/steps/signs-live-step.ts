/**
 * Step kind `signs.live`: the current state of today's traffic-sign API (v5 by
 * default, or v4), downloaded whole (gzip on the wire, streamed to disk),
 * typed by DuckDB and kept as one snapshot file per download under
 * signs/live_snapshots/snapshot_date=<date>/. The view signs_live is the latest
 * snapshot. A download the service says is unchanged (If-Modified-Since) adds
 * nothing.
 */
import { join } from 'node:path';
import { landedLiveIdentity, liveDiffers, type LiveIdentity } from '../sources/signs/identity.js';
import {
  FINGERPRINT_COLUMN,
  LIVE_COLUMNS,
  LIVE_DATASET,
  SNAPSHOT_DATE,
} from '../sources/signs/live.js';
import { z } from 'zod';
import { RECENT_NIGHTS, dailyRate, judgeSnapshot } from '../sources/signs/live-judge.js';
import { readCheckpoint } from '../sources/context.js';
import { landLiveSnapshot } from '../sources/signs/live-landing.js';
import {
  fetchCurrentState,
  liveBase,
  liveEndpoint,
  liveRequest,
  liveRequestKey,
  signsLiveOptions,
  type SignsLiveOptions,
} from '../sources/signs/live-options.js';
import {
  describeDownload,
  downloadCheckpoint,
  planDownload,
  runDownload,
  type DownloadPlan,
} from './download.js';
import { partitionsThere } from './decisions.js';
import { formatIsoDate } from '../util/time.js';
import { defineStepKind, upstreamOf } from './step-kind.js';
import { folderFilesOf } from '../duckdb/folder-files.js';
import { BBOX_COLUMN, BBOX_TYPE } from '../duckdb/geoparquet.js';

export type { SignsLiveOptions };

/** A service that keeps answering 304 is believed this long: then the current state is downloaded whole. */
const FULL_AFTER_MS = 20 * 3_600_000;

/** The checkpoint: the download's, and the share of signs gone per day on each of the folder's recent nights. */
const liveCheckpoint = downloadCheckpoint.extend({
  gone_per_day: z.array(z.number()).optional().catch(undefined),
});

/** The download, and the folder's recent nights, which set the rate an answer is judged by. */
type LivePlan = DownloadPlan & { gone_per_day: number[] };

export const signsLiveStep = defineStepKind<SignsLiveOptions, LivePlan>({
  kind: 'signs.live',
  description:
    'Download the current state of the traffic-sign API v5 (or v4) into signs/live_snapshots; signs_live is the latest',
  options: signsLiveOptions,
  single: true,
  source: 'signs',
  // NDW's bulk file is no API: a definition that reads only it names no source.
  asksUpstream: (options) => !options.file,
  // A snapshot is the state at its moment: the API serves the current state alone.
  repairLoses: (partition) =>
    `the snapshot(s) of ${partition ?? 'the file'}, whose moment NDW's API no longer serves (it serves the current state alone): that day's history leaves the folder for good`,
  views: {
    signs_live_snapshots: [
      ...LIVE_COLUMNS,
      ['snapshot', 'TIMESTAMPTZ'],
      [FINGERPRINT_COLUMN, 'BIGINT'],
      [BBOX_COLUMN, BBOX_TYPE],
      [SNAPSHOT_DATE, 'DATE'],
    ],
    signs_live: [...LIVE_COLUMNS, [FINGERPRINT_COLUMN, 'BIGINT'], [BBOX_COLUMN, BBOX_TYPE]],
  },
  plan(options, context) {
    const recent =
      readCheckpoint<z.output<typeof liveCheckpoint>>(context, liveCheckpoint, () => ({}))
        .gone_per_day ?? [];
    return {
      ...planDownload(context, liveRequestKey(options), { fullAfterMs: FULL_AFTER_MS }),
      gone_per_day: recent,
    };
  },
  describe(plan, options) {
    const rate = `${Math.round(dailyRate(plan.gone_per_day) * 1000) / 10}%`;
    return [
      `downloads ${liveRequest(options)} as ${options.format} into ${LIVE_DATASET} (a snapshot per download; signs_live is the latest)`,
      describeDownload(plan),
      options.max_gone === null || options.max_gone === undefined
        ? `lands the answer unless it leaves out or strips more signs than the days since the last snapshot change at ${rate} a day`
        : `lands the answer unless it leaves out more than max_gone ${options.max_gone * 100}% of the last snapshot's signs`,
    ];
  },
  decide(_options, context, plan) {
    const latest = [...partitionsThere(context, LIVE_DATASET)].sort().at(-1);
    const builds = [{ dataset: 'signs_live_snapshots', partitions: [formatIsoDate(Date.now())] }];
    // The last snapshot, which the new one is judged against.
    const reads =
      latest === undefined ? [] : [{ dataset: 'signs_live_snapshots', partitions: [latest] }];
    // Asked If-Modified-Since: a snapshot only if the service has a newer one, which it may not.
    return plan.if_modified_since
      ? {
          decision: 'skip',
          why: `lands no snapshot, unless the service has a current state newer than ${plan.if_modified_since}: then one in the partition of today's date`,
          builds: [],
          reads,
          may_build: builds,
        }
      : {
          decision: 'partial',
          why: "downloads the current state: a snapshot in the partition of today's date",
          builds,
          reads,
        };
  },
  upstreamIdentity: {
    async identify(options, context) {
      const base = liveBase(options, context.upstream.signs);
      if (base === undefined) return undefined;
      return landedLiveIdentity(await context.database(), base, liveRequest(options));
    },
    async check(options, context, stored) {
      const base = liveBase(options, context.upstream.signs);
      if (base === undefined) return undefined;
      return liveDiffers(context.http(options), stored as LiveIdentity, {
        api: options.api,
        base,
        rvvCodes: options.rvv_codes ?? undefined,
        roadSectionIds: options.road_section_ids ?? undefined,
        status: options.status ?? undefined,
        request: liveRequest(options),
        letThrough: (options.max_gone ?? 0) >= 1,
        signal: context.signal,
      });
    },
  },
  async reset(_options, context) {
    await folderFilesOf(context).remove(join(context.output, LIVE_DATASET));
  },
  async run(options, context, plan, decision) {
    // A bulk file needs no upstream.
    const upstream = options.file
      ? context.upstream.signs
      : upstreamOf(context, 'signs', 'signs.live');
    let downloadedAt = 0;
    let gonePerDay: number | undefined;
    const db = await context.database();
    return runDownload(
      options,
      context,
      { plan, decision },
      {
        file: `current-state.${options.format}`,
        endpoint: { method: 'GET', url: liveEndpoint(options, upstream) },
        fetch(http, file, since) {
          downloadedAt = Date.now();
          return fetchCurrentState(options, upstream, {
            http,
            file,
            since,
            signal: context.signal,
          });
        },
        unchanged(lastModified) {
          context.log.log(
            'info',
            'signs.live',
            `The current state of ${lastModified ?? '?'} is still the service's: no new snapshot`,
            { last_modified: lastModified },
          );
          return { rowsIn: 0, rowsOut: 0, notes: { unchanged: true } };
        },
        land: (file) =>
          landLiveSnapshot(context, {
            file,
            format: options.format,
            api: options.api,
            downloadedAt,
            judge: async (file, rows, features) => {
              const judged = await judgeSnapshot(db, {
                file,
                rows,
                features,
                maxGone: options.max_gone ?? undefined,
                maxStripped: options.max_stripped ?? undefined,
                recent: plan.gone_per_day,
                at: downloadedAt,
              });
              gonePerDay = judged.gonePerDay;
              return judged;
            },
          }),
        checkpoint: () => ({
          gone_per_day: [
            ...plan.gone_per_day,
            ...(gonePerDay === undefined ? [] : [gonePerDay]),
          ].slice(-RECENT_NIGHTS),
        }),
      },
    );
  },
});
