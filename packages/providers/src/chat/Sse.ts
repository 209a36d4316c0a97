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
    // The next LF and CR, found natively (indexOf) rather than character by character.
    let lf = text.indexOf("\n", from)
    let cr = text.indexOf("\r", from)
    while (lf !== -1 || cr !== -1) {
      const at = cr === -1 || (lf !== -1 && lf < cr) ? lf : cr
      const line = this.rest.length === 0 ? text.slice(from, at) : this.rest + text.slice(from, at)
      this.rest = ""
      this.line(line, events)
      from = at + 1
      if (at === cr) {
        if (from === length) this.afterCr = true
        else if (text.charCodeAt(from) === 10) from++
        cr = text.indexOf("\r", from)
      }
      if (lf !== -1 && lf < from) lf = text.indexOf("\n", from)
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
