/** A minimal WAV (RIFF) encoder for mono 16-bit PCM. */

export const encode = (samples: Int16Array, sampleRate: number): Uint8Array => {
  const data = samples.length * 2
  const out = Buffer.alloc(44 + data)
  out.write("RIFF", 0, "latin1")
  out.writeUInt32LE(36 + data, 4)
  out.write("WAVE", 8, "latin1")
  out.write("fmt ", 12, "latin1")
  out.writeUInt32LE(16, 16) // fmt chunk size
  out.writeUInt16LE(1, 20) // PCM
  out.writeUInt16LE(1, 22) // mono
  out.writeUInt32LE(sampleRate, 24)
  out.writeUInt32LE(sampleRate * 2, 28) // byte rate
  out.writeUInt16LE(2, 32) // block align
  out.writeUInt16LE(16, 34) // bits per sample
  out.write("data", 36, "latin1")
  out.writeUInt32LE(data, 40)
  for (let i = 0; i < samples.length; i++) out.writeInt16LE(samples[i]!, 44 + i * 2)
  return new Uint8Array(out)
}
