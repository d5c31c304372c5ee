/**
 * The simulator's options that `road-etl simulate` takes on its command line:
 * each flag once, with the option it sets, its type and its help. The command
 * builds its flags and the simulator's input from this list.
 */
import type { SimulatorInput } from './options.js';

export interface SimulatorFlag {
  flag: string;
  /** The option the flag sets: its path in SimulatorOptions. */
  option: readonly string[];
  type: 'number' | 'string' | 'boolean';
  describe: string;
  default?: number | boolean;
  /** A boolean flag that sets its option to the opposite (--end-exclusive: endInclusive false). */
  negate?: boolean;
  /** Shown under this heading in --help. */
  group?: string;
}

const FAULT = 'Faults:';

export const SIMULATOR_FLAGS: readonly SimulatorFlag[] = [
  {
    flag: 'port',
    option: ['port'],
    type: 'number',
    default: 0,
    describe: 'Port to listen on (0 = any free port)',
  },
  {
    flag: 'seed',
    option: ['seed'],
    type: 'number',
    default: 1,
    describe: 'Seed of all generated data',
  },
  {
    flag: 'signs',
    option: ['signs', 'signs'],
    type: 'number',
    describe: 'Number of distinct traffic signs',
  },
  {
    flag: 'locations',
    option: ['bicycle', 'locations'],
    type: 'number',
    describe: 'Number of bicycle counting locations',
  },
  {
    flag: 'feed-start',
    option: ['signs', 'feedStart'],
    type: 'string',
    describe: 'Start of the sign history (UTC ISO); default 2021-05-01T00:00:00.000Z',
  },
  {
    flag: 'now',
    option: ['now'],
    type: 'string',
    describe: "The simulator's clock (UTC ISO); default: end of the feed",
  },
  {
    flag: 'max-locations',
    option: ['bicycle', 'maxLocations'],
    type: 'number',
    describe: 'Hidden maximum of locations per request (default 50)',
  },
  {
    flag: 'max-period-days',
    option: ['bicycle', 'maxPeriodDays'],
    type: 'number',
    describe: 'Hidden maximum period in days (default 31)',
  },
  {
    flag: 'end-exclusive',
    option: ['bicycle', 'endInclusive'],
    type: 'boolean',
    negate: true,
    default: false,
    describe: 'Read endTime as exclusive',
  },
  {
    flag: 'indicator-category',
    option: ['bicycle', 'indicatorCategory'],
    type: 'boolean',
    default: false,
    describe:
      'Make the fourth bicycle category an indicator (meting: gemeten 1, geschat 0), no count of passages',
  },
  {
    flag: 'batch-upload-rate',
    option: ['bicycle', 'batchUploadRate'],
    type: 'number',
    describe: 'Share of bicycle counters that upload in batches, every 1 to 4 days (default 0)',
    group: FAULT,
  },
  {
    flag: 'late-hour-rate',
    option: ['bicycle', 'lateHourRate'],
    type: 'number',
    describe: 'Share of other bicycle hours served 1 to 48 hours late (default 0)',
    group: FAULT,
  },
  {
    flag: 'lost-hour-rate',
    option: ['bicycle', 'lostHourRate'],
    type: 'number',
    describe: 'Share of bicycle hours lost at random, never delivered (default 0.004)',
    group: FAULT,
  },
  {
    flag: 'counter-fault-rate',
    option: ['bicycle', 'faultRate'],
    type: 'number',
    describe: 'Share of location-days on which a bicycle counter fault starts (default 0.01)',
    group: FAULT,
  },
  {
    flag: 'burst-size',
    option: ['signs', 'burst', 'size'],
    type: 'number',
    describe: 'Events published at one instant (0 = none)',
  },
  {
    flag: 'burst-town',
    option: ['signs', 'burst', 'townCode'],
    type: 'string',
    describe: 'Put every burst event in this town code',
  },
  {
    flag: 'joining-share',
    option: ['signs', 'joining', 'share'],
    type: 'number',
    describe: 'Share of signs whose whole v1 history joins the feed at --joining-at (in its past)',
  },
  {
    flag: 'joining-at',
    option: ['signs', 'joining', 'at'],
    type: 'string',
    describe: 'When the joining signs appear (ISO; default: never)',
  },
  {
    flag: 'bad-record-rate',
    option: ['signs', 'badRecordRate'],
    type: 'number',
    describe: 'Fraction of sign records that cannot be typed',
  },
  {
    flag: 'hostile-text-rate',
    option: ['signs', 'hostileTextRate'],
    type: 'number',
    describe: 'Fraction of signs whose road name and texts are formulas, SQL, shell or paths',
  },
  {
    flag: 'token-seconds',
    option: ['auth', 'accessTokenSeconds'],
    type: 'number',
    describe: 'Access token lifetime (default 1800)',
  },
  {
    flag: 'refresh-seconds',
    option: ['auth', 'refreshTokenSeconds'],
    type: 'number',
    describe: 'Refresh token lifetime (default 3600)',
  },
  {
    flag: 'username',
    option: ['auth', 'username'],
    type: 'string',
    describe: 'Accepted username (default demo)',
  },
  {
    flag: 'password',
    option: ['auth', 'password'],
    type: 'string',
    describe: 'Accepted password (default demo)',
  },
  {
    flag: 'error-rate',
    option: ['faults', 'errorRate'],
    type: 'number',
    group: FAULT,
    describe: 'Fraction of requests answered 500',
  },
  {
    flag: 'reset-rate',
    option: ['faults', 'resetRate'],
    type: 'number',
    group: FAULT,
    describe: 'Fraction of connections reset',
  },
  {
    flag: 'truncate-rate',
    option: ['faults', 'truncateRate'],
    type: 'number',
    group: FAULT,
    describe: 'Fraction of bodies cut off halfway',
  },
  {
    flag: 'rate-limit-rate',
    option: ['faults', 'rateLimitRate'],
    type: 'number',
    group: FAULT,
    describe: 'Fraction answered 429 with Retry-After',
  },
  {
    flag: 'stall-rate',
    option: ['faults', 'stallRate'],
    type: 'number',
    group: FAULT,
    describe: 'Fraction of requests that stall 30 s',
  },
  {
    flag: 'html-rate',
    option: ['faults', 'htmlRate'],
    type: 'number',
    group: FAULT,
    describe: 'Fraction answered 200 with an HTML page',
  },
  {
    flag: 'content-type-rate',
    option: ['faults', 'contentTypeRate'],
    type: 'number',
    group: FAULT,
    describe: 'Fraction answered 200 with a text/plain body',
  },
  {
    flag: 'not-array-rate',
    option: ['faults', 'notArrayRate'],
    type: 'number',
    group: FAULT,
    describe: 'Fraction answered 200 with a JSON object where an array belongs',
  },
  {
    flag: 'non-objects-rate',
    option: ['faults', 'nonObjectsRate'],
    type: 'number',
    group: FAULT,
    describe: 'Fraction answered 200 with a JSON array of non-objects',
  },
  {
    flag: 'corrupt-gzip-rate',
    option: ['faults', 'corruptGzipRate'],
    type: 'number',
    group: FAULT,
    describe: 'Fraction answered 200 with a gzip body that does not inflate',
  },
  {
    flag: 'ragged-csv-rate',
    option: ['faults', 'raggedCsvRate'],
    type: 'number',
    group: FAULT,
    describe: 'Fraction of current-state CSV downloads with a ragged row',
  },
  {
    flag: 'latency-ms',
    option: ['faults', 'latencyMs'],
    type: 'number',
    group: FAULT,
    describe: 'Latency added to every request',
  },
];

/** The simulator's input from parsed flags (those not given are left to the defaults). */
export function inputFromFlags(args: Readonly<Record<string, unknown>>): SimulatorInput {
  const input: Record<string, unknown> = {};
  for (const { flag, option, negate } of SIMULATOR_FLAGS) {
    let value = args[flag];
    if (value === undefined) continue;
    if (negate) value = value !== true;
    let at = input;
    for (const key of option.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>;
    at[option.at(-1)!] = value;
  }
  return input as SimulatorInput;
}
