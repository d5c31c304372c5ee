/** `road-etl schema`: print the JSON Schema of pipeline definitions (pipelines/schema.json is this output). */
import type { CommandModule } from 'yargs';
import { definitionJsonSchema } from '../pipeline/json-schema.js';
import { writeOut, type CliIo } from './io.js';

export const schemaCommand = (io: CliIo): CommandModule => ({
  command: 'schema',
  describe: 'Print the JSON Schema of pipeline definitions (for editors)',
  handler: async () => {
    await writeOut(io.stdout, JSON.stringify(definitionJsonSchema(), null, 2) + '\n');
  },
});
