#!/usr/bin/env node
// One file (rolldown.config.js): the command starts in half the time.
import { main } from '../dist/bundle/main.js';

process.exit(await main(process.argv.slice(2)));
