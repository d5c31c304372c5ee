import { asyncBufferFromFile, parquetReadObjects, parquetMetadataAsync } from 'hyparquet';
const file = await asyncBufferFromFile(process.argv[2]);
const md = await parquetMetadataAsync(file);
console.log(md.schema.map(s => [s.name, s.type, JSON.stringify(s.logical_type), s.converted_type]).slice(0, 40));
console.log(md.key_value_metadata?.map(k => k.key));
const rows = await parquetReadObjects({ file, rowEnd: 1 });
console.log(rows[0]);
