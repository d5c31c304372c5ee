/** `road-etl report`: the output folder's report page (report/index.html). */
import { stat } from 'node:fs/promises';
import type { Argv, CommandModule } from 'yargs';
import { InputError } from '../errors.js';
import { DEFAULT_MAP_SIGNS, writeReport } from '../report/index.js';
import { tileTemplateProblem } from '../util/geo.js';
import { writeOut, type CliIo } from './io.js';
import { loggerFor, outputTarget, withCommonOptions, type CommonArgs } from './common.js';
import { withFolder } from '../pipeline/session.js';
import { recordWritten } from '../duckdb/folder-files.js';
import { bringDatasets } from '../pipeline/fetch-reads.js';

interface ReportArgs extends CommonArgs {
  'map-signs': number;
  tiles: string | undefined;
  'tiles-attribution': string;
}

export const reportCommand = (io: CliIo): CommandModule<object, ReportArgs> => ({
  command: 'report',
  describe:
    'Write report/index.html: the run, maps and charts of the output (one file, no network)',
  builder: (yargs: Argv) =>
    withCommonOptions(yargs)
      .option('map-signs', {
        type: 'number',
        default: DEFAULT_MAP_SIGNS,
        describe: 'Signs drawn per map at most; beyond it a random sample, stated as such',
      })
      .option('tiles', {
        type: 'string',
        describe:
          "Tile URL template for the maps' background, like https://tile.openstreetmap.org/{z}/{x}/{y}.png (the page then loads tiles from it); default: the country outlines inside the page, no network",
      })
      .option('tiles-attribution', {
        type: 'string',
        default: '© OpenStreetMap contributors',
        describe: 'Attribution shown with --tiles',
      })
      .example('$0 report --output output', 'write output/report/index.html')
      .example(
        '$0 report --tiles "https://tile.openstreetmap.org/{z}/{x}/{y}.png"',
        'with a map background',
      ) as unknown as Argv<ReportArgs>,
  handler: async (args) => {
    const logger = loggerFor(args, io);
    const mapSigns = args['map-signs'];
    if (!Number.isInteger(mapSigns) || mapSigns < 0)
      throw new InputError(
        `--map-signs: expected a whole number of 0 or more, got ${String(mapSigns)}`,
      );
    const problem = args.tiles === undefined ? undefined : tileTemplateProblem(args.tiles);
    if (problem) throw new InputError(`--tiles: ${problem}`);
    await withFolder(
      outputTarget(args),
      io.env,
      async ({ folder: output, shown, files }) => {
        const folder = await stat(output).catch(() => undefined);
        if (!folder?.isDirectory())
          throw new InputError(`--output ${output}: no such folder (run a pipeline into it first)`);
        // The report reads every dataset: a folder in a store fetches them first.
        await bringDatasets(output, files, { reader: 'the report', logger });
        const report = await writeReport(output, {
          mapSigns,
          tiles:
            args.tiles === undefined
              ? undefined
              : { url: args.tiles, attribution: args['tiles-attribution'] },
        });
        await recordWritten(files, report.path);
        const path = shown(report.path);
        logger.log('info', 'report.written', `Report written to ${path}`, {
          path,
          bytes: report.bytes,
        });
        await writeOut(io.stdout, JSON.stringify({ report: path, bytes: report.bytes }) + '\n');
      },
      { writes: { lock: 'report' } },
    );
  },
});
