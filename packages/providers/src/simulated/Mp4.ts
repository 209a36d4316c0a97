/**
 * A minimal MP4 (ISO BMFF) writer for one H.264 video track: `ftyp`, then `moov` (so players
 * can start before the whole file arrives), then one `mdat` holding every sample as a single
 * chunk. Frame rate is constant; the sample table lists each sample's size and the IDR frames.
 */
import type { Stream } from "./H264.ts"

const TIMESCALE = 1000

const u8 = (value: number) => Uint8Array.of(value & 0xff)
const u16 = (value: number) => Uint8Array.of((value >>> 8) & 0xff, value & 0xff)
const u32 = (value: number) => {
  const out = new Uint8Array(4)
  new DataView(out.buffer).setUint32(0, value >>> 0)
  return out
}
const zeros = (length: number) => new Uint8Array(length)
const ascii = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0))

const concat = (parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0))
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.length
  }
  return out
}

const box = (type: string, ...payload: ReadonlyArray<Uint8Array>): Uint8Array => {
  const body = concat(payload)
  return concat([u32(8 + body.length), ascii(type), body])
}

const fullBox = (type: string, version: number, flags: number, ...payload: ReadonlyArray<Uint8Array>) =>
  box(type, u32((version << 24) | flags), ...payload)

/** The identity transformation matrix of mvhd and tkhd. */
const MATRIX = concat([0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000].map(u32))

export interface Video {
  readonly width: number
  readonly height: number
  readonly fps: number
  readonly stream: Stream
}

const avcC = (stream: Stream) =>
  box(
    "avcC",
    u8(1), // configurationVersion
    u8(stream.sps[1]!), // profile
    u8(stream.sps[2]!), // profile compatibility (constraint flags)
    u8(stream.sps[3]!), // level
    u8(0xff), // 4-byte NAL lengths
    u8(0xe1), // one SPS
    u16(stream.sps.length),
    stream.sps,
    u8(1), // one PPS
    u16(stream.pps.length),
    stream.pps
  )

const moov = (video: Video, duration: number, delta: number, chunkOffset: number) => {
  const { width, height, stream } = video
  const syncSamples = stream.sync.flatMap((sync, index) => (sync ? [index + 1] : []))
  const sampleEntry = box(
    "avc1",
    zeros(6),
    u16(1), // data_reference_index
    zeros(16), // pre_defined and reserved
    u16(width),
    u16(height),
    u32(0x00480000), // 72 dpi
    u32(0x00480000),
    zeros(4),
    u16(1), // frame_count
    zeros(32), // compressorname
    u16(0x0018), // depth
    u16(0xffff), // pre_defined = -1
    avcC(stream)
  )
  const stbl = box(
    "stbl",
    fullBox("stsd", 0, 0, u32(1), sampleEntry),
    fullBox("stts", 0, 0, u32(1), u32(stream.samples.length), u32(delta)),
    fullBox("stss", 0, 0, u32(syncSamples.length), ...syncSamples.map(u32)),
    fullBox("stsc", 0, 0, u32(1), u32(1), u32(stream.samples.length), u32(1)),
    fullBox("stsz", 0, 0, u32(0), u32(stream.samples.length), ...stream.samples.map((sample) => u32(sample.length))),
    fullBox("stco", 0, 0, u32(1), u32(chunkOffset))
  )
  const minf = box(
    "minf",
    fullBox("vmhd", 0, 1, zeros(8)),
    box("dinf", fullBox("dref", 0, 0, u32(1), fullBox("url ", 0, 1))),
    stbl
  )
  const mdia = box(
    "mdia",
    fullBox("mdhd", 0, 0, u32(0), u32(0), u32(TIMESCALE), u32(duration), u16(0x55c4) /* "und" */, u16(0)),
    fullBox("hdlr", 0, 0, u32(0), ascii("vide"), zeros(12), ascii("VideoHandler\0")),
    minf
  )
  const tkhd = fullBox(
    "tkhd",
    0,
    3, // enabled, in movie
    u32(0),
    u32(0),
    u32(1), // track_ID
    u32(0),
    u32(duration),
    zeros(8),
    u16(0), // layer
    u16(0), // alternate_group
    u16(0), // volume
    u16(0),
    MATRIX,
    u32(width << 16),
    u32(height << 16)
  )
  const mvhd = fullBox(
    "mvhd",
    0,
    0,
    u32(0),
    u32(0),
    u32(TIMESCALE),
    u32(duration),
    u32(0x00010000), // rate 1.0
    u16(0x0100), // volume 1.0
    zeros(10),
    MATRIX,
    zeros(24),
    u32(2) // next_track_ID
  )
  return box("moov", mvhd, box("trak", tkhd, mdia))
}

export const encode = (video: Video): Uint8Array => {
  const delta = Math.round(TIMESCALE / video.fps)
  const duration = delta * video.stream.samples.length
  const ftyp = box("ftyp", ascii("isom"), u32(512), ascii("isom"), ascii("iso2"), ascii("avc1"), ascii("mp41"))
  // The moov's size does not depend on the offset's value, so measure it first.
  const moovSize = moov(video, duration, delta, 0).length
  const mdat = box("mdat", ...video.stream.samples)
  return concat([ftyp, moov(video, duration, delta, ftyp.length + moovSize + 8), mdat])
}
