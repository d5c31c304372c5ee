/** `road-etl simulate`: serve the simulated upstream and print the env lines that point road-etl at it. */
import { once } from 'node:events';
import type { Argv, CommandModule } from 'yargs';
import { InputError } from '../errors.js';
import { SIMULATOR_FLAGS, inputFromFlags } from '../simulator/flags.js';
import { SCALES, Simulator, type ScaleName, type SimulatorInput } from '../simulator/index.js';
import type { CliIo } from './io.js';

type SimulateArgs = Record<string, unknown> & { scale: string; seed: number };

/** Builds simulator options from the command line (the scale first, then explicit values). */
function simulatorInputFromArgs(args: SimulateArgs): SimulatorInput[] {
  return [SCALES[args.scale as ScaleName], inputFromFlags(args)];
}

export const simulateCommand = (io: CliIo): CommandModule<object, SimulateArgs> => ({
  command: 'simulate',
  describe: 'Serve a simulated upstream (bicycle + traffic-sign APIs) on 127.0.0.1',
  builder: (yargs: Argv) => {
    let built = yargs.option('scale', {
      choices: Object.keys(SCALES) as ScaleName[],
      default: 'default',
      describe: 'Size of the world: small, default, large (~1M events), national (3M signs)',
    });
    for (const f of SIMULATOR_FLAGS)
      built = built.option(f.flag, {
        type: f.type,
        describe: f.describe,
        ...(f.default === undefined ? {} : { default: f.default }),
      });
    const faults = SIMULATOR_FLAGS.filter((f) => f.group).map((f) => f.flag);
    return built
      .group(faults, 'Faults:')
      .example('$0 simulate --port 8080', 'serve on a fixed port')
      .example(
        '$0 simulate --scale large --latency-ms 50',
        'a million events, 50 ms per request',
      ) as unknown as Argv<SimulateArgs>;
  },
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
