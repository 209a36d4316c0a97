/**
 * The simulated provider's songs: a seeded melody on a pentatonic scale over a bass note,
 * each note with a short attack and decay, as 16-bit mono PCM.
 */
import * as Seed from "./Seed.ts"

export const SAMPLE_RATE = 22_050

const PENTATONIC = [0, 2, 4, 7, 9, 12, 14, 16]

const frequency = (semitonesFromA4: number) => 440 * 2 ** (semitonesFromA4 / 12)

export const melody = (seed: string, seconds: number): Int16Array => {
  const random = Seed.random(seed, "melody")
  const root = -12 + random.int(10)
  const beat = 0.2 + random.next() * 0.2
  const samples = new Int16Array(Math.round(seconds * SAMPLE_RATE))
  const noteLength = Math.round(beat * SAMPLE_RATE)
  for (let start = 0, index = 0; start < samples.length; start += noteLength, index++) {
    const lead = frequency(root + random.pick(PENTATONIC))
    const bass = frequency(root - 12 + (Math.floor(index / 8) % 2 === 0 ? 0 : 7))
    const rest = random.next() < 0.12
    for (let i = 0; i < noteLength && start + i < samples.length; i++) {
      const t = i / SAMPLE_RATE
      const envelope = Math.min(1, i / 200) * Math.exp((-3 * i) / noteLength)
      const time = (start + i) / SAMPLE_RATE
      const value = (rest ? 0 : 0.45 * envelope * Math.sin(2 * Math.PI * lead * t)) + 0.2 * Math.sin(2 * Math.PI * bass * time)
      samples[start + i] = Math.round(Math.max(-1, Math.min(1, value)) * 32_000)
    }
  }
  return samples
}
