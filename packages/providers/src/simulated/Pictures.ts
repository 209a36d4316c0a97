/**
 * What the simulated provider draws: a diagonal gradient between two colours of the seed with
 * soft rings around a seeded centre for images, and for videos a still gradient with a ball
 * bouncing across it and a progress bar along the bottom edge.
 */
import * as H264 from "./H264.ts"
import * as Seed from "./Seed.ts"

type Rgb = readonly [number, number, number]

const colour = (random: Seed.Random): Rgb => [40 + random.int(200), 40 + random.int(200), 40 + random.int(200)]

const mix = (a: Rgb, b: Rgb, t: number): Rgb => [a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t]

/** Width and height for an aspect ratio ("16:9" or "1280x720"), the longer side `longSide`. */
export const dimensions = (
  ratio: string,
  longSide: number,
  multipleOf = 1
): { readonly width: number; readonly height: number } => {
  const [w, h] = ratio.split(/[:x]/).map(Number) as [number, number]
  const valid = w > 0 && h > 0
  const scale = longSide / Math.max(valid ? w : 1, valid ? h : 1)
  const side = (value: number) => Math.max(multipleOf, Math.round((value * scale) / multipleOf) * multipleOf)
  return valid ? { width: side(w), height: side(h) } : { width: longSide, height: longSide }
}

/** An RGB picture, 3 bytes a pixel. */
export const image = (seed: string, width: number, height: number): Uint8Array => {
  const random = Seed.random(seed, "image")
  const from = colour(random)
  const to = colour(random)
  const centre = [random.next() * width, random.next() * height]
  const period = 12 + random.int(28)
  const out = new Uint8Array(width * height * 3)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const base = mix(from, to, (x / width + y / height) / 2)
      const ring = 0.85 + 0.15 * Math.cos((Math.hypot(x - centre[0]!, y - centre[1]!) / period) * Math.PI * 2)
      const i = (y * width + x) * 3
      out[i] = Math.min(255, base[0] * ring)
      out[i + 1] = Math.min(255, base[1] * ring)
      out[i + 2] = Math.min(255, base[2] * ring)
    }
  }
  return out
}

/** BT.601 studio range, which keeps every sample within 16..240 as PCM macroblocks need. */
const toYuv = ([r, g, b]: Rgb): Rgb => [
  Math.round(16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255),
  Math.round(128 + (-37.797 * r - 74.203 * g + 112 * b) / 255),
  Math.round(128 + (112 * r - 93.786 * g - 18.214 * b) / 255)
]

/** `count` frames of `width` x `height` (multiples of 16). */
export function* videoFrames(seed: string, width: number, height: number, count: number): Generator<H264.Frame> {
  const random = Seed.random(seed, "video")
  const from = colour(random)
  const to = colour(random)
  const ball = toYuv(colour(random))
  const bar = toYuv([235, 235, 235])
  const background = {
    y: new Uint8Array(width * height),
    u: new Uint8Array((width * height) / 4),
    v: new Uint8Array((width * height) / 4)
  }
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const [luma, cb, cr] = toYuv(mix(from, to, (x / width + y / height) / 2))
      background.y[y * width + x] = luma
      if (x % 2 === 0 && y % 2 === 0) {
        background.u[(y / 2) * (width / 2) + x / 2] = cb
        background.v[(y / 2) * (width / 2) + x / 2] = cr
      }
    }
  }
  const radius = Math.max(4, Math.round(Math.min(width, height) / 12))
  const speed = [1.5 + random.next() * 2.5, 1 + random.next() * 2]
  const travel = [width - 2 * radius, height - 2 * radius - 8]
  // A triangle wave: the ball bounces between the edges.
  const bounce = (t: number, span: number) => (span <= 0 ? 0 : span - Math.abs((t % (2 * span)) - span))
  for (let index = 0; index < count; index++) {
    const frame = { y: background.y.slice(), u: background.u.slice(), v: background.v.slice() }
    const cx = radius + bounce(index * speed[0]! * 4, travel[0]!)
    const cy = radius + bounce(index * speed[1]! * 4, travel[1]!)
    for (let y = Math.max(0, Math.floor(cy - radius)); y < Math.min(height, cy + radius); y++) {
      for (let x = Math.max(0, Math.floor(cx - radius)); x < Math.min(width, cx + radius); x++) {
        if (Math.hypot(x - cx, y - cy) > radius) continue
        frame.y[y * width + x] = ball[0]
        frame.u[(y >> 1) * (width / 2) + (x >> 1)] = ball[1]
        frame.v[(y >> 1) * (width / 2) + (x >> 1)] = ball[2]
      }
    }
    const filled = Math.round((width * (index + 1)) / count)
    for (let y = height - 4; y < height; y++) {
      for (let x = 0; x < filled; x++) {
        frame.y[y * width + x] = bar[0]
        frame.u[(y >> 1) * (width / 2) + (x >> 1)] = bar[1]
        frame.v[(y >> 1) * (width / 2) + (x >> 1)] = bar[2]
      }
    }
    yield frame
  }
}
