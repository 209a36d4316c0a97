import { describe, expect, it } from "@effect/vitest"
import * as MediaKind from "../src/MediaKind.ts"

const bytes = (...parts: Array<string | ReadonlyArray<number>>) =>
  Uint8Array.from(parts.flatMap((part) => (typeof part === "string" ? [...part].map((c) => c.charCodeAt(0)) : [...part])))

describe("MediaKind.compatibleTypes", () => {
  it("recognises each accepted format by its leading bytes", () => {
    expect(MediaKind.compatibleTypes(bytes([0x89], "PNG\r\n", [0x1a, 0x0a], "rest"))).toEqual(["image/png"])
    expect(MediaKind.compatibleTypes(bytes([0xff, 0xd8, 0xff, 0xdb]))).toEqual(["image/jpeg"])
    expect(MediaKind.compatibleTypes(bytes("GIF87a..."))).toEqual(["image/gif"])
    expect(MediaKind.compatibleTypes(bytes("RIFF", [1, 2, 3, 4], "WEBPVP8L"))).toEqual(["image/webp"])
    expect(MediaKind.compatibleTypes(bytes([0, 0, 0, 0x20], "ftypisom"))).toEqual(["video/mp4", "video/quicktime"])
    expect(MediaKind.compatibleTypes(bytes([0, 0, 0, 0x08], "wide"))).toEqual(["video/mp4", "video/quicktime"])
    expect(MediaKind.compatibleTypes(bytes([0x1a, 0x45, 0xdf, 0xa3, 0x93, 0x42, 0x82, 0x88], "webm"))).toEqual(["video/webm"])
  })

  it("recognises nothing in other files, short files and look-alikes", () => {
    for (const head of [
      bytes(""),
      bytes([0x89], "PN"),
      bytes("RIFF", [1, 2, 3, 4], "WAVE"),
      bytes([0x1a, 0x45, 0xdf, 0xa3, 0x93, 0x42, 0x82, 0x88], "matroska"),
      bytes("<svg xmlns=...>"),
      bytes("%PDF-1.7")
    ]) {
      expect(MediaKind.compatibleTypes(head)).toEqual([])
    }
    expect(MediaKind.describe(bytes([0x1a, 0x45, 0xdf, 0xa3], "matroska"))).toContain("Matroska")
  })
})
