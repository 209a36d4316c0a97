/**
 * A list of validation problems as one message, bounded: the first `MAX_LISTED` (20) joined by
 * "; ", then "and N more". A body of 256 KB can carry tens of thousands of problems (unknown
 * keys); listing them all would answer megabytes, and the first few are what a caller fixes.
 * Repeated problems are listed once.
 */

/** How many problems a message lists before "and N more". */
export const MAX_LISTED = 20

export const join = (problems: Iterable<string>, max: number = MAX_LISTED): string => {
  const distinct = [...new Set(problems)]
  const listed = distinct.slice(0, max).join("; ")
  return distinct.length > max ? `${listed}; and ${distinct.length - max} more` : listed
}

/** The problems `join` lists, each once: the first `max`. */
export const listed = (problems: Iterable<string>, max: number = MAX_LISTED): ReadonlyArray<string> =>
  [...new Set(problems)].slice(0, max)
