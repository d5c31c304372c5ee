/**
 * Checks of received text that keep the text as it came and say what is wrong
 * with it (for typing_issues).
 */

/**
 * UTF-8 read as Latin-1 or Windows-1252 and encoded again: "CuraÃ§aostraat"
 * for "Curaçaostraat". An accented letter becomes Ã or Â followed by the
 * character its second byte (0x80..0xBF) is in Latin-1 (U+0080..U+00BF) or in
 * Windows-1252 (‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ for 0x80..0x9F: "Ã‰glise"); a
 * typographic quote or dash starts with "â€".
 */
const MOJIBAKE = "'[ÃÂ][\\x{80}-\\x{BF}‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ]|â€'";

/** SQL: the issue text when `text` (an expression) looks mis-encoded, else NULL. */
export function misEncodedIssue(field: string, text: string): string {
  return `CASE WHEN regexp_matches(${text}, ${MOJIBAKE}) THEN '${field}: mis-encoded UTF-8 (' || ${text} || ')' END`;
}
