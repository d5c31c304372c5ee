/** `road-etl schema`: print the JSON Schema of pipeline definitions (pipelines/schema.json is this output). */
import type { CommandModule } from 'yargs';
import { definitionJsonSchema } from '../pipeline/json-schema.js';

export const schemaCommand: CommandModule = {
  command: 'schema',
  describe: 'Print the JSON Schema of pipeline definitions (for editors)',
  handler: () => {
    process.stdout.write(JSON.stringify(definitionJsonSchema(), null, 2) + '\n');
  },
};
