import { Database } from './dist/duckdb/database.js';
