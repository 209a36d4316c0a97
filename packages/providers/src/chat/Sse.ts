/**
 * Server-sent events as chat upstreams send them, read incrementally from the body's text: `feed`
 * gives the `data` of each event its text completes, in order; `end` the event still open when the
 * body ends. Lines of one event are joined with "\n"; comments (`:`), `event`, `id` and `retry`
 * fields are skipped. CRLF, LF and CR line ends are all read, even split across pieces.
 */
export class Reader {
  /** Text after the last line end seen. */
  private rest = ""
  /** The last piece ended with CR: an LF starting the next one belongs to that line end. */
  private afterCr = false
  private data: Array<string> = []

  feed(text: string): Array<string> {
    const events: Array<string> = []
    let from = 0
    if (this.afterCr && text.charCodeAt(0) === 10) from = 1
    this.afterCr = false
    const length = text.length
    for (let at = from; at < length; at++) {
      const code = text.charCodeAt(at)
      if (code !== 10 && code !== 13) continue
      const line = this.rest.length === 0 ? text.slice(from, at) : this.rest + text.slice(from, at)
      this.rest = ""
      this.line(line, events)
      if (code === 13) {
        if (at + 1 === length) this.afterCr = true
        else if (text.charCodeAt(at + 1) === 10) at++
      }
      from = at + 1
    }
    if (from < length) this.rest += text.slice(from)
    return events
  }

  end(): Array<string> {
    const events: Array<string> = []
    if (this.rest.length > 0) this.line(this.rest, events)
    this.rest = ""
    if (this.data.length > 0) events.push(this.data.join("\n"))
    this.data = []
    return events
  }

  private line(line: string, events: Array<string>): void {
    if (line === "") {
      if (this.data.length > 0) events.push(this.data.length === 1 ? this.data[0]! : this.data.join("\n"))
      this.data = []
    } else if (line.startsWith("data:")) {
      this.data.push(line.slice(line.startsWith("data: ") ? 6 : 5))
    }
  }
}
