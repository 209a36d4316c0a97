/** CSV text (RFC 4180: every field quoted, quotes doubled, CRLF line ends). */
export const csv = (rows: ReadonlyArray<ReadonlyArray<string | number | null>>): string =>
  `${rows.map((row) => row.map((cell) => `"${String(cell ?? "").replaceAll('"', '""')}"`).join(",")).join("\r\n")}\r\n`
