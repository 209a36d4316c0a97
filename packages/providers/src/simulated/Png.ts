/**
 * A minimal PNG encoder: 8-bit RGB, no interlace, each scanline with the Sub filter, the image
 * data deflated by node:zlib and every chunk closed by its CRC-32.
 */
import { crc32, deflateSync } from "node:zlib"

const SIGNATURE = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)

const chunk = (type: string, data: Uint8Array): Buffer => {
  const head = Buffer.alloc(8)
  head.writeUInt32BE(data.length, 0)
  head.write(type, 4, "latin1")
  const tail = Buffer.alloc(4)
  tail.writeUInt32BE(crc32(data, crc32(head.subarray(4))) >>> 0, 0)
  return Buffer.concat([head, data, tail])
}

/** `rgb` holds width * height pixels, 3 bytes each, row by row. */
export const encode = (width: number, height: number, rgb: Uint8Array): Uint8Array => {
  if (rgb.length !== width * height * 3) throw new RangeError("Png.encode: pixel data does not match the size")
  const stride = width * 3
  const filtered = Buffer.alloc((stride + 1) * height)
  for (let y = 0; y < height; y++) {
    const row = y * (stride + 1)
    filtered[row] = 1 // Sub: each byte minus the byte of the pixel to its left
    for (let x = 0; x < stride; x++) {
      const left = x >= 3 ? rgb[y * stride + x - 3]! : 0
      filtered[row + 1 + x] = (rgb[y * stride + x]! - left) & 0xff
    }
  }
  const header = Buffer.alloc(13)
  header.writeUInt32BE(width, 0)
  header.writeUInt32BE(height, 4)
  header[8] = 8 // bit depth
  header[9] = 2 // colour type: truecolour
  return new Uint8Array(
    Buffer.concat([SIGNATURE, chunk("IHDR", header), chunk("IDAT", deflateSync(filtered)), chunk("IEND", new Uint8Array(0))])
  )
}
