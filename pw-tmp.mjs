import { readParquet } from 'parquet-wasm/node';
import { tableFromIPC } from 'apache-arrow';
import { readFileSync } from 'node:fs';
const wasm = readParquet(new Uint8Array(readFileSync(process.argv[2])));
const table = tableFromIPC(wasm.intoIPCStream());
for (const f of table.schema.fields) console.log(f.name, String(f.type), [...f.metadata]);
console.log(table.get(0)?.toJSON());
