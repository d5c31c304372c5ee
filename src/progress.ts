/**
 * Progress of a long step: a live line on a TTY (rows, requests, rate, ETA),
 * a JSON log event every few seconds otherwise.
 */
import type { Logger } from './log.js';

export interface ProgressUpdate {
  rows?: number;
  requests?: number;
  /** Units of work done, out of total (if known). */
  done?: number;
}

export interface Progress {
  start(label: string, total?: number): void;
  /** Adds to the counters. */
  add(update: ProgressUpdate): void;
  setTotal(total: number): void;
  finish(): void;
}

export const silentProgress: Progress = { start() {}, add() {}, setTotal() {}, finish() {} };

function duration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  const s = Math.round(seconds);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

export function createProgress(
  logger: Logger,
  stream: NodeJS.WritableStream & { columns?: number },
): Progress {
  let label = '';
  let total: number | undefined;
  let rows = 0;
  let requests = 0;
  let done = 0;
  let started = 0;
  let lastDraw = 0;
  const interval = logger.interactive ? 150 : 10_000;

  function line(): string {
    const seconds = (performance.now() - started) / 1000;
    const rate = seconds > 0 ? Math.round(rows / seconds) : 0;
    const parts = [label];
    if (total) {
      const fraction = Math.min(1, done / total);
      const width = 20;
      const filled = Math.round(fraction * width);
      parts.push(
        `${'█'.repeat(filled)}${'░'.repeat(width - filled)} ${Math.round(fraction * 100)}%`,
      );
      parts.push(`ETA ${duration(done > 0 ? (seconds * (total - done)) / done : NaN)}`);
    }
    parts.push(
      `${rows.toLocaleString('en')} rows`,
      `${requests.toLocaleString('en')} requests`,
      `${rate.toLocaleString('en')} rows/s`,
    );
    return parts.join('  ');
  }

  function draw(force = false): void {
    const now = performance.now();
    if (!force && now - lastDraw < interval) return;
    lastDraw = now;
    if (logger.interactive) {
      const text = line().slice(0, (stream.columns ?? 100) - 1);
      stream.write(`\r\x1b[2K${text}`);
    } else {
      logger.log('info', 'progress', line(), { step: label, rows, requests, done, total });
    }
  }

  return {
    start(name, expected) {
      label = name;
      total = expected;
      rows = requests = done = 0;
      started = lastDraw = performance.now();
    },
    add(update) {
      rows += update.rows ?? 0;
      requests += update.requests ?? 0;
      done += update.done ?? 0;
      draw();
    },
    setTotal(expected) {
      total = expected;
    },
    finish() {
      if (logger.interactive && lastDraw > started) stream.write('\r\x1b[2K');
    },
  };
}
