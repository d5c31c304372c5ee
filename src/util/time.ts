/** UTC time helpers. All instants are epoch milliseconds unless a name says otherwise. */

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

const SECOND_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z$/;
const MILLI_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})Z$/;

function fromParts(parts: readonly string[], millis: string): number | undefined {
  const [year, month, day, hour, minute, second] = parts.map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const ms = Date.UTC(year, month - 1, day, hour, minute, second, Number(millis));
  const back = new Date(ms);
  // Refuse what Date.UTC would silently roll over (Feb 30, 25:00, ...).
  if (
    back.getUTCFullYear() !== year ||
    back.getUTCMonth() !== month - 1 ||
    back.getUTCDate() !== day ||
    back.getUTCHours() !== hour ||
    back.getUTCMinutes() !== minute ||
    back.getUTCSeconds() !== second
  ) {
    return undefined;
  }
  return ms;
}

/** Parses exactly `YYYY-MM-DDTHH:mm:ssZ`; undefined for anything else. */
export function parseSecondTimestamp(text: string): number | undefined {
  const match = SECOND_TIMESTAMP.exec(text);
  return match ? fromParts(match.slice(1, 7), '0') : undefined;
}

/** Parses exactly `YYYY-MM-DDTHH:mm:ss.SSSZ`; undefined for anything else. */
export function parseMilliTimestamp(text: string): number | undefined {
  const match = MILLI_TIMESTAMP.exec(text);
  return match ? fromParts(match.slice(1, 7), match[7] ?? '0') : undefined;
}

/** `YYYY-MM-DDTHH:mm:ssZ` (milliseconds dropped). */
export function formatSecondTimestamp(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19) + 'Z';
}

/** `YYYY-MM-DDTHH:mm:ss.SSSZ`. */
export function formatMilliTimestamp(ms: number): string {
  return new Date(ms).toISOString();
}

const isoDates = new Map<number, string>();

/** `YYYY-MM-DD` of the UTC date of an instant (memoised per day: dates repeat a lot). */
export function formatIsoDate(ms: number): string {
  const day = Math.floor(ms / DAY_MS);
  let text = isoDates.get(day);
  if (text === undefined) {
    text = new Date(day * DAY_MS).toISOString().slice(0, 10);
    if (isoDates.size > 100_000) isoDates.clear();
    isoDates.set(day, text);
  }
  return text;
}

/** `dd/MM/yyyy` of the UTC date of an instant. */
export function formatDutchDate(ms: number): string {
  const iso = formatIsoDate(ms);
  return `${iso.slice(8, 10)}/${iso.slice(5, 7)}/${iso.slice(0, 4)}`;
}

/** The first instant of the UTC month that contains ms. */
export function startOfUtcMonth(ms: number): number {
  const date = new Date(ms);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
}
