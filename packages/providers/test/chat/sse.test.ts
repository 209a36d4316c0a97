import { describe, expect, it } from "vitest"
import * as Sse from "../../src/chat/Sse.ts"

/** The data of the events in `pieces`, fed one after the other, then the body's end. */
const read = (...pieces: ReadonlyArray<string>) => {
  const reader = new Sse.Reader()
  return [...pieces.flatMap((piece) => reader.feed(piece)), ...reader.end()]
}

describe("Sse.Reader", () => {
  it("reads LF, CRLF and CR line ends, and joins the data lines of one event", () => {
    expect(read("data: a\n\ndata: b\r\n\r\ndata: c\r\rdata:d\n")).toEqual(["a", "b", "c", "d"])
    expect(read("data: 1\ndata: 2\n\n")).toEqual(["1\n2"])
  })

  it("reads events cut anywhere, even between the CR and the LF of a line end", () => {
    expect(read("data: x\r", "\ndata: y\r", "\n\r", "\n")).toEqual(["x\ny"])
    expect(read("da", "ta: z", "z\r", "\r")).toEqual(["zz"])
  })

  it("skips comments and other fields, and delivers an event still open at the end", () => {
    expect(read(": keep-alive\n\nevent: delta\nid: 7\nretry: 10\ndata: {}\n\n", "data: tail")).toEqual(["{}", "tail"])
  })
})
