/**
 * What a step cost the process, for the manifest: CPU time (user + system, all
 * threads, DuckDB's included) and the peak resident memory while it ran.
 */
import { readFileSync } from 'node:fs';

export interface StepCost {
  /** CPU time of the process during the step (user + system), in ms. */
  cpu_ms: number;
  /** Largest resident set of the process during the step, in bytes. */
  peak_rss_bytes: number;
}

/** The process's high-water mark of resident memory (Linux), or undefined. */
function highWaterMark(): number | undefined {
  try {
    const kb = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}

/** Measures from construction to stop(). */
export class StepMeter {
  readonly #cpu = process.cpuUsage();
  readonly #highWater = highWaterMark();
  #peak = process.memoryUsage.rss();
  readonly #timer = setInterval(() => this.#sample(), 200);

  constructor() {
    this.#timer.unref();
  }

  #sample(): void {
    this.#peak = Math.max(this.#peak, process.memoryUsage.rss());
  }

  stop(): StepCost {
    clearInterval(this.#timer);
    this.#sample();
    const cpu = process.cpuUsage(this.#cpu);
    // A high-water mark that rose during the step is its exact peak; samples may miss one.
    const highWater = highWaterMark();
    const peak =
      highWater !== undefined && this.#highWater !== undefined && highWater > this.#highWater
        ? highWater
        : this.#peak;
    return { cpu_ms: Math.round((cpu.user + cpu.system) / 1000), peak_rss_bytes: peak };
  }
}
