/**
 * Server-sent events as chat upstreams send them: the `data` of each event, in order. Lines of
 * one event are joined with "\n"; comments (`:`), `event`, `id` and `retry` fields are skipped;
 * an event still open when the body ends is delivered. CRLF, LF and CR line ends are all read.
 */
import { Stream } from "effect"

interface Pending {
  readonly data: ReadonlyArray<string>
}

const empty: Pending = { data: [] }

const flush = (pending: Pending): ReadonlyArray<string> => (pending.data.length === 0 ? [] : [pending.data.join("\n")])

export const dataOf = <E, R>(bytes: Stream.Stream<Uint8Array, E, R>): Stream.Stream<string, E, R> =>
  bytes.pipe(
    Stream.decodeText,
    Stream.splitLines,
    Stream.mapAccum(
      () => empty,
      (pending, line): readonly [Pending, ReadonlyArray<string>] => {
        if (line === "") return [empty, flush(pending)]
        if (line.startsWith("data:")) {
          const value = line.slice(line.startsWith("data: ") ? 6 : 5)
          return [{ data: [...pending.data, value] }, []]
        }
        return [pending, []]
      },
      { onHalt: flush }
    )
  )
