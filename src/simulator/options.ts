/**
 * Everything the simulator can be told, with its default: a small but complete
 * world that serves every rule of the upstream contract and the known messiness
 * of the real payloads; the scale presets grow it to the national size.
 */

export interface FaultOptions {
  /** Fraction of requests answered 500 with an error body. Default 0. */
  errorRate: number;
  /** Fraction of requests whose connection is reset before any answer. Default 0. */
  resetRate: number;
  /** Fraction of 200 answers cut off halfway through the body. Default 0. */
  truncateRate: number;
  /** Fraction of requests answered 429 with a Retry-After header. Default 0. */
  rateLimitRate: number;
  /** Seconds named in Retry-After on a 429. Default 1. */
  retryAfterSeconds: number;
  /** Fraction of requests that stall for stallMs before answering. Default 0. */
  stallRate: number;
  /** How long a stall lasts, in ms. Default 30000. */
  stallMs: number;
  /** Fraction of requests answered 200 with an HTML error page. Default 0. */
  htmlRate: number;
  /** Fraction of requests answered 200 with a text/plain body. Default 0. */
  contentTypeRate: number;
  /** Fraction of requests answered 200 with a JSON object where an array belongs. Default 0. */
  notArrayRate: number;
  /** Fraction of requests answered 200 with a JSON array of numbers, strings and null. Default 0. */
  nonObjectsRate: number;
  /** Fraction of requests answered 200 with a gzip body that does not inflate. Default 0. */
  corruptGzipRate: number;
  /** Fraction of current-state CSV downloads with a row of one field too many. Default 0. */
  raggedCsvRate: number;
  /** Latency added to every request, in ms. Default 0. */
  latencyMs: number;
  /** Only requests whose path contains one of these are faulted; empty = all. Default []. */
  paths: string[];
}
export interface AuthOptions {
  username: string;
  password: string;
  /** Accepted client_id; undefined accepts any non-empty client_id. Default undefined. */
  clientId: string | undefined;
  /** Access token lifetime in seconds (expires_in). Default 1800. */
  accessTokenSeconds: number;
  /** Refresh token lifetime in seconds (refresh_expires_in). Default 3600. */
  refreshTokenSeconds: number;
}

export interface BicycleOptions {
  /** Number of counting locations. Default 120. */
  locations: number;
  /** Hidden maximum of locations in one measurement request. Default 50. */
  maxLocations: number;
  /** Hidden maximum length of a requested period, in days. Default 31. */
  maxPeriodDays: number;
  /** Whether endTime is read as inclusive (the hour at endTime is returned). Default true. */
  endInclusive: boolean;
  /** First hour any location can have data (UTC ISO). Default 2019-01-01T00:00:00Z. */
  dataStart: string;
  /** Fraction of rows whose measurementHour is off the whole hour (bad rows). Default 0. */
  offHourRate: number;
  /**
   * Share of location-days on which a counter fault starts (dead, zero run,
   * stuck, a direction missing or off its split, a spike, night activity, a
   * level shift, hours not delivered); see bicycle/counts.ts. Default 0.01.
   */
  faultRate: number;
  /** The fourth category an indicator (`meting`: gemeten 1, geschat 0), no count of passages. Default false. */
  indicatorCategory: boolean;
  /** Share of counters that upload in batches, every 1 to 4 days (world.ts servedAt). Default 0. */
  batchUploadRate: number;
  /** Share of the other hours served 1 to 48 hours late. Default 0. */
  lateHourRate: number;
  /** Share of hours a counter loses at random, never delivered (besides whole lost days). Default 0.004. */
  lostHourRate: number;
}

export interface BurstOptions {
  /** Number of extra events published at one instant. 0 = no burst. Default 0. */
  size: number;
  /** When set, every burst event is for a sign in this town; else spread over towns. */
  townCode: string | undefined;
  /** Fraction (0..1) of the feed's time span at which the burst instant lies. Default 0.6. */
  at: number;
}

export interface SignsOptions {
  /** Number of distinct signs over the whole history. Default 3000. */
  signs: number;
  /** Rounds of changes after the first creation; each visits every sign once. Default 6. */
  rounds: number;
  /** Chance that a live sign changes in a round. Default 0.35. */
  updateRate: number;
  /** Chance that such a change is a deletion. Default 0.12. */
  deleteRate: number;
  /** Chance that a deleted sign is created again in a round. Default 0.3. */
  recreateRate: number;
  /** Chance that a change is followed by a second one at the same instant. Default 0.02. */
  doubleRate: number;
  /** Chance that an event is published twice, identically. Default 0.005. */
  duplicateRate: number;
  /** Chance that a record cannot be typed (id not a number). Default 0. */
  badRecordRate: number;
  /**
   * Chance that a sign's free text (road name, text_signs) is hostile: a
   * spreadsheet formula, SQL, shell syntax or a path. Default 0.
   */
  hostileTextRate: number;
  /** Start of the feed (UTC ISO). Default 2021-05-01T00:00:00.000Z. */
  feedStart: string;
  /** End of the feed's generated history (UTC ISO). Default 2026-11-15T00:00:00.000Z. */
  feedEnd: string;
  /** An instant shared by more events than a chunk can hold. */
  burst: BurstOptions;
  /**
   * A share of the signs whose whole history joins the v1 feed (and its
   * download) only when the clock reaches `at`: the feed grows in its past.
   */
  joining: { share: number; at: string | undefined };
}

export interface SimulatorOptions {
  /** Seed of every generated value. Default 1. */
  seed: number;
  /** Host to listen on (loopback only). Default 127.0.0.1. */
  host: string;
  /** Port; 0 = any free port. Default 0. */
  port: number;
  /**
   * The simulator's "now" (UTC ISO): events published after it are not yet in the
   * feed, and measurements after it do not exist yet. Default: signs.feedEnd.
   */
  now: string | undefined;
  auth: AuthOptions;
  bicycle: BicycleOptions;
  signs: SignsOptions;
  faults: FaultOptions;
}

export type DeepPartial<T> = {
  [K in keyof T]?: T[K] extends readonly unknown[]
    ? T[K]
    : T[K] extends object | undefined
      ? DeepPartial<NonNullable<T[K]>> | undefined
      : T[K] | undefined;
};

export type SimulatorInput = DeepPartial<SimulatorOptions>;

export const DEFAULT_SIMULATOR_OPTIONS: SimulatorOptions = {
  seed: 1,
  host: '127.0.0.1',
  port: 0,
  now: undefined,
  auth: {
    username: 'demo',
    password: 'demo',
    clientId: undefined,
    accessTokenSeconds: 1800,
    refreshTokenSeconds: 3600,
  },
  bicycle: {
    locations: 120,
    maxLocations: 50,
    maxPeriodDays: 31,
    endInclusive: true,
    dataStart: '2019-01-01T00:00:00Z',
    offHourRate: 0,
    faultRate: 0.01,
    indicatorCategory: false,
    batchUploadRate: 0,
    lateHourRate: 0,
    lostHourRate: 0.004,
  },
  signs: {
    signs: 3000,
    rounds: 6,
    updateRate: 0.35,
    deleteRate: 0.12,
    recreateRate: 0.3,
    doubleRate: 0.02,
    duplicateRate: 0.005,
    badRecordRate: 0,
    hostileTextRate: 0,
    feedStart: '2021-05-01T00:00:00.000Z',
    feedEnd: '2026-11-15T00:00:00.000Z',
    burst: { size: 0, townCode: undefined, at: 0.6 },
    joining: { share: 0, at: undefined },
  },
  faults: {
    errorRate: 0,
    resetRate: 0,
    truncateRate: 0,
    rateLimitRate: 0,
    retryAfterSeconds: 1,
    stallRate: 0,
    stallMs: 30_000,
    htmlRate: 0,
    contentTypeRate: 0,
    notArrayRate: 0,
    nonObjectsRate: 0,
    corruptGzipRate: 0,
    raggedCsvRate: 0,
    latencyMs: 0,
    paths: [],
  },
};

/** Named sizes for `road-etl simulate --scale`. */
export const SCALES = {
  small: { signs: { signs: 1000 }, bicycle: { locations: 60 } },
  default: {},
  large: { signs: { signs: 330_000 }, bicycle: { locations: 1000 } },
  national: { signs: { signs: 3_000_000, rounds: 1 }, bicycle: { locations: 3000 } },
} satisfies Record<string, SimulatorInput>;

export type ScaleName = keyof typeof SCALES;

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function merge<T>(base: T, override: unknown): T {
  if (!isPlainObject(base) || !isPlainObject(override)) return base;
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(override)) {
    if (value === undefined) continue;
    if (!(key in base)) throw new TypeError(`Unknown simulator option: ${key}`);
    out[key] = isPlainObject(base[key]) ? merge(base[key], value) : value;
  }
  return out as T;
}

/** The random fault rates, in the order a request's roll meets them. */
export const FAULT_RATES = [
  'errorRate',
  'resetRate',
  'rateLimitRate',
  'stallRate',
  'htmlRate',
  'truncateRate',
  'contentTypeRate',
  'notArrayRate',
  'nonObjectsRate',
  'corruptGzipRate',
  'raggedCsvRate',
] as const;

function rate(name: string, value: number): void {
  if (!(value >= 0 && value <= 1)) throw new RangeError(`${name} must be between 0 and 1`);
}

function positiveInteger(name: string, value: number): void {
  if (!Number.isInteger(value) || value < 1)
    throw new RangeError(`${name} must be a positive integer`);
}

/** Fills defaults in and checks ranges; throws a RangeError or TypeError naming the option. */
export function resolveSimulatorOptions(...inputs: SimulatorInput[]): SimulatorOptions {
  const options = inputs.reduce<SimulatorOptions>(
    (acc, input) => merge(acc, input),
    DEFAULT_SIMULATOR_OPTIONS,
  );
  const { signs, bicycle, faults, auth } = options;
  positiveInteger('signs.signs', signs.signs);
  positiveInteger('signs.rounds', signs.rounds);
  positiveInteger('bicycle.locations', bicycle.locations);
  positiveInteger('bicycle.maxLocations', bicycle.maxLocations);
  positiveInteger('bicycle.maxPeriodDays', bicycle.maxPeriodDays);
  positiveInteger('auth.accessTokenSeconds', auth.accessTokenSeconds);
  positiveInteger('auth.refreshTokenSeconds', auth.refreshTokenSeconds);
  const signRates = ['updateRate', 'deleteRate', 'recreateRate', 'doubleRate'] as const;
  for (const key of [...signRates, 'duplicateRate', 'badRecordRate', 'hostileTextRate'] as const)
    rate(`signs.${key}`, signs[key]);
  rate('signs.burst.at', signs.burst.at);
  rate('signs.joining.share', signs.joining.share);
  if (signs.joining.at !== undefined && Number.isNaN(Date.parse(signs.joining.at)))
    throw new RangeError('signs.joining.at must be an ISO timestamp');
  for (const key of ['offHourRate', 'batchUploadRate', 'lateHourRate', 'lostHourRate'] as const)
    rate(`bicycle.${key}`, bicycle[key]);
  let faulted = 0;
  for (const key of FAULT_RATES) {
    rate(`faults.${key}`, faults[key]);
    faulted += faults[key];
  }
  if (faulted > 1 + 1e-9) {
    throw new RangeError(
      `the fault rates add up to ${Number(faulted.toFixed(6))}, more than 1 (every request)`,
    );
  }
  if (!(faults.latencyMs >= 0)) throw new RangeError('faults.latencyMs must be >= 0');
  if (Number.isNaN(Date.parse(signs.feedStart)) || Number.isNaN(Date.parse(signs.feedEnd))) {
    throw new RangeError('signs.feedStart and signs.feedEnd must be ISO timestamps');
  }
  if (Date.parse(signs.feedEnd) <= Date.parse(signs.feedStart))
    throw new RangeError('signs.feedEnd must be after signs.feedStart');
  if (options.now !== undefined && Number.isNaN(Date.parse(options.now)))
    throw new RangeError('now must be an ISO timestamp');
  return options;
}
