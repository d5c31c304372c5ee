/** `road-etl simulate`: serve the simulated upstream and print the env lines that point road-etl at it. */
import { once } from 'node:events';
import type { Argv, CommandModule } from 'yargs';
import { InputError } from '../errors.js';
import { SCALES, Simulator, type ScaleName, type SimulatorInput } from '../simulator/index.js';
import type { CliIo } from './io.js';

interface SimulateArgs {
  port: number;
  seed: number;
  scale: string;
  signs: number | undefined;
  locations: number | undefined;
  now: string | undefined;
  'feed-start': string | undefined;
  'max-locations': number | undefined;
  'max-period-days': number | undefined;
  'end-exclusive': boolean;
  'burst-size': number | undefined;
  'burst-town': string | undefined;
  'bad-record-rate': number | undefined;
  'hostile-text-rate': number | undefined;
  'token-seconds': number | undefined;
  'refresh-seconds': number | undefined;
  username: string | undefined;
  password: string | undefined;
  'error-rate': number | undefined;
  'reset-rate': number | undefined;
  'truncate-rate': number | undefined;
  'rate-limit-rate': number | undefined;
  'stall-rate': number | undefined;
  'html-rate': number | undefined;
  'content-type-rate': number | undefined;
  'not-array-rate': number | undefined;
  'non-objects-rate': number | undefined;
  'corrupt-gzip-rate': number | undefined;
  'ragged-csv-rate': number | undefined;
  'latency-ms': number | undefined;
}

/** Builds simulator options from the command line (the scale first, then explicit values). */
function simulatorInputFromArgs(args: SimulateArgs): SimulatorInput[] {
  return [
    SCALES[args.scale as ScaleName],
    {
      seed: args.seed,
      port: args.port,
      now: args.now,
      auth: {
        accessTokenSeconds: args['token-seconds'],
        refreshTokenSeconds: args['refresh-seconds'],
        username: args.username,
        password: args.password,
      },
      bicycle: {
        locations: args.locations,
        maxLocations: args['max-locations'],
        maxPeriodDays: args['max-period-days'],
        endInclusive: !args['end-exclusive'],
      },
      signs: {
        signs: args.signs,
        feedStart: args['feed-start'],
        badRecordRate: args['bad-record-rate'],
        hostileTextRate: args['hostile-text-rate'],
        burst: { size: args['burst-size'], townCode: args['burst-town'] },
      },
      faults: {
        errorRate: args['error-rate'],
        resetRate: args['reset-rate'],
        truncateRate: args['truncate-rate'],
        rateLimitRate: args['rate-limit-rate'],
        stallRate: args['stall-rate'],
        htmlRate: args['html-rate'],
        contentTypeRate: args['content-type-rate'],
        notArrayRate: args['not-array-rate'],
        nonObjectsRate: args['non-objects-rate'],
        corruptGzipRate: args['corrupt-gzip-rate'],
        raggedCsvRate: args['ragged-csv-rate'],
        latencyMs: args['latency-ms'],
      },
    },
  ];
}

export const simulateCommand = (io: CliIo): CommandModule<object, SimulateArgs> => ({
  command: 'simulate',
  describe: 'Serve a simulated upstream (bicycle + traffic-sign APIs) on 127.0.0.1',
  builder: (yargs: Argv) =>
    yargs
      .option('port', {
        type: 'number',
        default: 0,
        describe: 'Port to listen on (0 = any free port)',
      })
      .option('seed', { type: 'number', default: 1, describe: 'Seed of all generated data' })
      .option('scale', {
        choices: Object.keys(SCALES) as ScaleName[],
        default: 'default',
        describe: 'Size of the world: small, default, large (~1M events), national (3M signs)',
      })
      .option('signs', { type: 'number', describe: 'Number of distinct traffic signs' })
      .option('locations', { type: 'number', describe: 'Number of bicycle counting locations' })
      .option('feed-start', {
        type: 'string',
        describe: 'Start of the sign history (UTC ISO); default 2021-05-01T00:00:00.000Z',
      })
      .option('now', {
        type: 'string',
        describe: "The simulator's clock (UTC ISO); default: end of the feed",
      })
      .option('max-locations', {
        type: 'number',
        describe: 'Hidden maximum of locations per request (default 50)',
      })
      .option('max-period-days', {
        type: 'number',
        describe: 'Hidden maximum period in days (default 31)',
      })
      .option('end-exclusive', {
        type: 'boolean',
        default: false,
        describe: 'Read endTime as exclusive',
      })
      .option('burst-size', {
        type: 'number',
        describe: 'Events published at one instant (0 = none)',
      })
      .option('burst-town', { type: 'string', describe: 'Put every burst event in this town code' })
      .option('bad-record-rate', {
        type: 'number',
        describe: 'Fraction of sign records that cannot be typed',
      })
      .option('hostile-text-rate', {
        type: 'number',
        describe: 'Fraction of signs whose road name and texts are formulas, SQL, shell or paths',
      })
      .option('token-seconds', { type: 'number', describe: 'Access token lifetime (default 1800)' })
      .option('refresh-seconds', {
        type: 'number',
        describe: 'Refresh token lifetime (default 3600)',
      })
      .option('username', { type: 'string', describe: 'Accepted username (default demo)' })
      .option('password', { type: 'string', describe: 'Accepted password (default demo)' })
      .option('error-rate', { type: 'number', describe: 'Fraction of requests answered 500' })
      .option('reset-rate', { type: 'number', describe: 'Fraction of connections reset' })
      .option('truncate-rate', { type: 'number', describe: 'Fraction of bodies cut off halfway' })
      .option('rate-limit-rate', {
        type: 'number',
        describe: 'Fraction answered 429 with Retry-After',
      })
      .option('stall-rate', { type: 'number', describe: 'Fraction of requests that stall 30 s' })
      .option('html-rate', { type: 'number', describe: 'Fraction answered 200 with an HTML page' })
      .option('content-type-rate', {
        type: 'number',
        describe: 'Fraction answered 200 with a text/plain body',
      })
      .option('not-array-rate', {
        type: 'number',
        describe: 'Fraction answered 200 with a JSON object where an array belongs',
      })
      .option('non-objects-rate', {
        type: 'number',
        describe: 'Fraction answered 200 with a JSON array of non-objects',
      })
      .option('corrupt-gzip-rate', {
        type: 'number',
        describe: 'Fraction answered 200 with a gzip body that does not inflate',
      })
      .option('ragged-csv-rate', {
        type: 'number',
        describe: 'Fraction of current-state CSV downloads with a ragged row',
      })
      .option('latency-ms', { type: 'number', describe: 'Latency added to every request' })
      .group(
        [
          'error-rate',
          'reset-rate',
          'truncate-rate',
          'rate-limit-rate',
          'stall-rate',
          'html-rate',
          'content-type-rate',
          'not-array-rate',
          'non-objects-rate',
          'corrupt-gzip-rate',
          'ragged-csv-rate',
          'latency-ms',
        ],
        'Faults:',
      )
      .example('$0 simulate --port 8080', 'serve on a fixed port')
      .example(
        '$0 simulate --scale large --latency-ms 50',
        'a million events, 50 ms per request',
      ) as unknown as Argv<SimulateArgs>,
  handler: async (args) => {
    let simulator: Simulator;
    try {
      simulator = await Simulator.start(...simulatorInputFromArgs(args));
    } catch (error) {
      if (error instanceof RangeError || error instanceof TypeError) {
        throw new InputError(`simulate: ${error.message}`, { cause: error });
      }
      throw error;
    }
    for (const [key, value] of Object.entries(simulator.env)) io.stdout.write(`${key}=${value}\n`);
    io.stderr.write(
      `Simulator listening on ${simulator.url} (seed ${args.seed}, ${simulator.options.signs.signs} signs, ` +
        `${simulator.options.bicycle.locations} locations). Ctrl-C stops it.\n`,
    );
    await Promise.race([once(process, 'SIGINT'), once(process, 'SIGTERM')]);
    await simulator.close();
  },
});
