import { describe, expect, it } from "@effect/vitest"
import { StorableText } from "../../src/index.ts"

const HIGH = "\ud800"
const LOW = "\udc00"

describe("StorableText.problemOf", () => {
  it("refuses U+0000 anywhere in a string", () => {
    expect(StorableText.problemOf("\u0000")).toBe("contains U+0000 (NUL)")
    expect(StorableText.problemOf("a\u0000b")).toBe("contains U+0000 (NUL)")
    expect(StorableText.problemOf("ab\u0000")).toBe("contains U+0000 (NUL)")
  })

  it("refuses a lone high or low surrogate, wherever it stands", () => {
    for (const text of [HIGH, LOW, `a${HIGH}`, `${LOW}a`, `${LOW}${HIGH}`, `😀${HIGH}`, `${HIGH}${HIGH}${LOW}`]) {
      expect(StorableText.problemOf(text), JSON.stringify(text)).toBe("contains an unpaired surrogate")
    }
  })

  it("accepts surrogate pairs, emoji and other text", () => {
    for (const text of ["", "plain", "😀", `${HIGH}${LOW}`, "𝄞 é 中文 \u0001 \u007f \uffff \ufffd", "a\\u0000b"]) {
      expect(StorableText.problemOf(text), JSON.stringify(text)).toBeUndefined()
      expect(StorableText.isStorable(text)).toBe(true)
    }
  })
})

describe("StorableText.findUnstorable", () => {
  it("accepts values whose every string can be stored", () => {
    expect(
      StorableText.findUnstorable({ prompt: "a fox 🦊", n: 1, ok: true, none: null, list: ["x", ["y"]] }, "input")
    ).toBeUndefined()
    expect(StorableText.findUnstorable(42)).toBeUndefined()
    expect(StorableText.findUnstorable(null)).toBeUndefined()
  })

  it("names the path of a value", () => {
    expect(StorableText.findUnstorable({ prompt: "a\u0000b" }, "input")).toEqual({
      path: "input.prompt",
      problem: "contains U+0000 (NUL)"
    })
    expect(StorableText.findUnstorable({ imageUrls: ["https://a.example/x.png", `https://b.example/${HIGH}`] }, "input")).toEqual(
      { path: "input.imageUrls[1]", problem: "contains an unpaired surrogate" }
    )
    expect(StorableText.findUnstorable({ messages: [{ content: [{ type: "text", text: LOW }] }] })).toEqual({
      path: "messages[0].content[0].text",
      problem: "contains an unpaired surrogate"
    })
  })

  it("names a key, written as JSON where it is no identifier", () => {
    expect(StorableText.findUnstorable({ ["a\u0000b"]: "fine" }, "input")).toEqual({
      path: 'input["a\\u0000b"]',
      problem: "its name contains U+0000 (NUL)"
    })
    expect(StorableText.findUnstorable({ nested: { [`k${HIGH}`]: 1 } }, "input")).toEqual({
      path: 'input.nested["k\\ud800"]',
      problem: "its name contains an unpaired surrogate"
    })
    expect(StorableText.findUnstorable({ "two words": ["\u0000"] }, "input")).toEqual({
      path: 'input["two words"][0]',
      problem: "contains U+0000 (NUL)"
    })
  })

  it("finds the first in document order", () => {
    expect(StorableText.findUnstorable({ a: ["ok", { b: "\u0000" }], c: HIGH }, "input")?.path).toBe("input.a[1].b")
    expect(StorableText.findUnstorable([["ok"], [HIGH, "\u0000"]])?.path).toBe("[1][0]")
  })

  it("a bare string is `the value`", () => {
    const found = StorableText.findUnstorable("\u0000")
    expect(found).toEqual({ path: "", problem: "contains U+0000 (NUL)" })
    expect(StorableText.describe(found!)).toMatch(/^the value: contains U\+0000 \(NUL\)/)
  })

  it("walks values nested deeper than the stack would allow a recursion", () => {
    const depth = 50_000
    const deep = JSON.parse(`${"[".repeat(depth)}"\\u0000"${"]".repeat(depth)}`)
    const found = StorableText.findUnstorable(deep, "input")
    expect(found?.problem).toBe("contains U+0000 (NUL)")
    expect(found?.path).toBe(`input${"[0]".repeat(depth)}`)
  })

  it("sees what JSON.parse makes of escapes", () => {
    expect(StorableText.findUnstorable(JSON.parse(`{"prompt":"a\\u0000b"}`), "input")?.path).toBe("input.prompt")
    expect(StorableText.findUnstorable(JSON.parse(`{"prompt":"\\ud83d"}`), "input")?.problem).toBe(
      "contains an unpaired surrogate"
    )
    expect(StorableText.findUnstorable(JSON.parse(`{"prompt":"\\ud83d\\ude00"}`), "input")).toBeUndefined()
  })
})

describe("StorableText.toStorable", () => {
  it("replaces U+0000 and unpaired surrogates with U+FFFD, in keys and values, leaving the rest", () => {
    expect(StorableText.toStorable("a\u0000b\ud800c\ud83d\ude00")).toBe("a\ufffdb\ufffdc\ud83d\ude00")
    expect(StorableText.toStorable({ ["k\u0000"]: ["ok", { n: 1, t: "\udc00" }] })).toEqual({
      "k\ufffd": ["ok", { n: 1, t: "\ufffd" }]
    })
    const clean = { text: "lyrics", tags: ["a"] }
    expect(StorableText.toStorable(clean)).toBe(clean)
    expect(StorableText.toStorable(undefined)).toBeUndefined()
  })

  it("keeps key order, own __proto__ keys and the later of two keys that become equal", () => {
    const stored = StorableText.toStorable(JSON.parse('{"b":"\\u0000","__proto__":{"x":1},"k\\u0000":1,"k\\ud800":2,"a":null}'))
    expect(Object.keys(stored)).toEqual(["b", "__proto__", "k\ufffd", "a"])
    expect(stored).toEqual(JSON.parse('{"b":"\ufffd","__proto__":{"x":1},"k\ufffd":2,"a":null}'))
    expect(Object.getPrototypeOf(stored)).toBe(Object.prototype)
  })

  it("makes a value nested 100,000 levels deep storable instead of overflowing the stack", () => {
    const depth = 100_000
    const stored = StorableText.toStorable(JSON.parse('{"a":'.repeat(depth) + '"\\u0000"' + "}".repeat(depth)))
    let inner: any = stored
    for (let i = 0; i < depth; i++) inner = inner.a
    expect(inner).toBe("\ufffd")
  })
})
