/** Typed pipeline params: their kinds, and the parsing of values given on the command line. */
import { parseSecondTimestamp } from '../util/time.js';

export const PARAM_TYPES = [
  'string',
  'integer',
  'number',
  'boolean',
  'timestamp',
  'date',
  'list',
  'path',
] as const;
export type ParamType = (typeof PARAM_TYPES)[number];
export type ParamValue = string | number | boolean | string[] | null;

const PARAM_TYPE_HELP: Record<ParamType, string> = {
  string: 'any text',
  integer: 'a whole number',
  number: 'a number',
  boolean: 'true or false',
  timestamp: 'a UTC timestamp YYYY-MM-DDTHH:mm:ssZ',
  date: 'a date YYYY-MM-DD',
  list: 'a comma-separated list',
  path: 'a file path',
};

/** Parses a param value given as text (--param k=v); returns an error message instead when it does not fit. */
export function parseParamText(
  type: ParamType,
  text: string,
): { value: ParamValue } | { error: string } {
  switch (type) {
    case 'string':
    case 'path':
      return { value: text };
    case 'integer':
      return /^-?\d+$/.test(text)
        ? { value: Number(text) }
        : { error: `must be ${PARAM_TYPE_HELP.integer}, got "${text}"` };
    case 'number':
      return text.trim() !== '' && Number.isFinite(Number(text))
        ? { value: Number(text) }
        : { error: `must be ${PARAM_TYPE_HELP.number}, got "${text}"` };
    case 'boolean':
      if (text === 'true') return { value: true };
      if (text === 'false') return { value: false };
      return { error: `must be true or false, got "${text}"` };
    case 'timestamp':
      return checkTimestamp(text);
    case 'date':
      return /^\d{4}-\d{2}-\d{2}$/.test(text) &&
        parseSecondTimestamp(`${text}T00:00:00Z`) !== undefined
        ? { value: text }
        : { error: `must be ${PARAM_TYPE_HELP.date}, got "${text}"` };
    case 'list': {
      const items = text
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
      return items.length > 0
        ? { value: items }
        : { error: 'must be a non-empty comma-separated list' };
    }
  }
}

function checkTimestamp(text: string): { value: string } | { error: string } {
  if (parseSecondTimestamp(text) !== undefined) return { value: text };
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?([+-]\d{2}:?\d{2})?$/.test(text)) {
    return {
      error: `must be in UTC with a Z, like 2024-03-01T00:00:00Z (local times and offsets are refused), got "${text}"`,
    };
  }
  return { error: `must be ${PARAM_TYPE_HELP.timestamp}, got "${text}"` };
}

/** Checks a value that came from YAML (a default) against the type; returns the normalised value or an error. */
export function checkParamValue(
  type: ParamType,
  value: unknown,
): { value: ParamValue } | { error: string } {
  if (value === null) return { value: null };
  if (type === 'list') {
    if (Array.isArray(value) && value.every((v) => typeof v === 'string')) {
      return value.length > 0 ? { value: value } : { error: 'must be a non-empty list' };
    }
    if (typeof value === 'string') return parseParamText(type, value);
    return { error: 'must be a list of strings' };
  }
  if (type === 'integer' || type === 'number') {
    if (typeof value === 'number') {
      return type === 'integer' && !Number.isInteger(value)
        ? { error: `must be ${PARAM_TYPE_HELP.integer}` }
        : { value };
    }
  }
  if (type === 'boolean' && typeof value === 'boolean') return { value };
  if (typeof value === 'string') return parseParamText(type, value);
  return { error: `must be ${PARAM_TYPE_HELP[type]}` };
}
