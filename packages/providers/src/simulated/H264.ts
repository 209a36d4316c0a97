/**
 * A tiny H.264 encoder for the simulated provider's videos: Constrained Baseline, CAVLC, every coded
 * macroblock I_PCM (the decoded picture equals the input exactly). The first frame is an IDR
 * picture; each later one a P picture coding only the macroblocks that changed and skipping the
 * rest (zero motion everywhere). Deblocking is off, pic_order_cnt_type 2, each frame referencing
 * the one before.
 */

export interface Frame {
  /** Luma, width * height bytes. */
  readonly y: Uint8Array
  /** Chroma, (width / 2) * (height / 2) bytes each. */
  readonly u: Uint8Array
  readonly v: Uint8Array
}

export interface Stream {
  /** Sequence and picture parameter sets, as NAL units without start codes. */
  readonly sps: Uint8Array
  readonly pps: Uint8Array
  /** One access unit per frame: its NAL units, each prefixed by a 4-byte length (MP4 style). */
  readonly samples: ReadonlyArray<Uint8Array>
  /** Per sample, whether it is an IDR picture (a sync sample). */
  readonly sync: ReadonlyArray<boolean>
}

const PROFILE_BASELINE = 66
/** constraint_set0 and constraint_set1: Constrained Baseline. */
const CONSTRAINTS = 0xc0
const LEVEL_3_0 = 30
const LOG2_MAX_FRAME_NUM = 8
const I_PCM_IN_I_SLICE = 25
const I_PCM_IN_P_SLICE = 30

class BitWriter {
  private buffer = new Uint8Array(1024)
  private length = 0
  private current = 0
  private count = 0

  private push(byte: number) {
    if (this.length === this.buffer.length) {
      const grown = new Uint8Array(this.buffer.length * 2)
      grown.set(this.buffer)
      this.buffer = grown
    }
    this.buffer[this.length++] = byte
  }

  bit(value: number) {
    this.current = (this.current << 1) | (value & 1)
    if (++this.count === 8) {
      this.push(this.current)
      this.current = 0
      this.count = 0
    }
  }

  u(bits: number, value: number) {
    for (let i = bits - 1; i >= 0; i--) this.bit((value >>> i) & 1)
  }

  ue(value: number) {
    const code = value + 1
    const bits = 32 - Math.clz32(code)
    this.u(bits - 1, 0)
    this.u(bits, code)
  }

  se(value: number) {
    this.ue(value <= 0 ? -2 * value : 2 * value - 1)
  }

  alignWithZeros() {
    while (this.count !== 0) this.bit(0)
  }

  /** Raw bytes at a byte boundary. */
  bytes(source: Uint8Array, start: number, length: number) {
    for (let i = 0; i < length; i++) this.push(source[start + i]!)
  }

  trailing() {
    this.bit(1)
    this.alignWithZeros()
  }

  done(): Uint8Array {
    return this.buffer.slice(0, this.length)
  }
}

/** A NAL unit: header byte, then the RBSP with emulation prevention bytes inserted. */
const nal = (refIdc: number, type: number, rbsp: Uint8Array): Uint8Array => {
  const out: Array<number> = [(refIdc << 5) | type]
  let zeros = 0
  for (const byte of rbsp) {
    if (zeros >= 2 && byte <= 3) {
      out.push(3)
      zeros = 0
    }
    out.push(byte)
    zeros = byte === 0 ? zeros + 1 : 0
  }
  return Uint8Array.from(out)
}

const sps = (widthMbs: number, heightMbs: number): Uint8Array => {
  const w = new BitWriter()
  w.u(8, PROFILE_BASELINE)
  w.u(8, CONSTRAINTS)
  w.u(8, LEVEL_3_0)
  w.ue(0) // seq_parameter_set_id
  w.ue(LOG2_MAX_FRAME_NUM - 4)
  w.ue(2) // pic_order_cnt_type
  w.ue(1) // max_num_ref_frames
  w.bit(0) // gaps_in_frame_num_value_allowed_flag
  w.ue(widthMbs - 1)
  w.ue(heightMbs - 1)
  w.bit(1) // frame_mbs_only_flag
  w.bit(1) // direct_8x8_inference_flag
  w.bit(0) // frame_cropping_flag
  w.bit(0) // vui_parameters_present_flag
  w.trailing()
  return nal(3, 7, w.done())
}

const pps = (): Uint8Array => {
  const w = new BitWriter()
  w.ue(0) // pic_parameter_set_id
  w.ue(0) // seq_parameter_set_id
  w.bit(0) // entropy_coding_mode_flag: CAVLC
  w.bit(0) // bottom_field_pic_order_in_frame_present_flag
  w.ue(0) // num_slice_groups_minus1
  w.ue(0) // num_ref_idx_l0_default_active_minus1
  w.ue(0) // num_ref_idx_l1_default_active_minus1
  w.bit(0) // weighted_pred_flag
  w.u(2, 0) // weighted_bipred_idc
  w.se(0) // pic_init_qp_minus26
  w.se(0) // pic_init_qs_minus26
  w.se(0) // chroma_qp_index_offset
  w.bit(1) // deblocking_filter_control_present_flag
  w.bit(0) // constrained_intra_pred_flag
  w.bit(0) // redundant_pic_cnt_present_flag
  w.trailing()
  return nal(3, 8, w.done())
}

const writePcm = (w: BitWriter, frame: Frame, width: number, mbX: number, mbY: number) => {
  w.alignWithZeros() // pcm_alignment_zero_bit
  for (let row = 0; row < 16; row++) w.bytes(frame.y, (mbY * 16 + row) * width + mbX * 16, 16)
  const chromaWidth = width / 2
  for (const plane of [frame.u, frame.v]) {
    for (let row = 0; row < 8; row++) w.bytes(plane, (mbY * 8 + row) * chromaWidth + mbX * 8, 8)
  }
}

const same = (a: Uint8Array, b: Uint8Array, stride: number, x: number, y: number, size: number): boolean => {
  for (let row = 0; row < size; row++) {
    const start = (y + row) * stride + x
    for (let i = 0; i < size; i++) if (a[start + i] !== b[start + i]) return false
  }
  return true
}

const unchanged = (previous: Frame, frame: Frame, width: number, mbX: number, mbY: number): boolean =>
  same(previous.y, frame.y, width, mbX * 16, mbY * 16, 16) &&
  same(previous.u, frame.u, width / 2, mbX * 8, mbY * 8, 8) &&
  same(previous.v, frame.v, width / 2, mbX * 8, mbY * 8, 8)

const idr = (frame: Frame, width: number, widthMbs: number, heightMbs: number): Uint8Array => {
  const w = new BitWriter()
  w.ue(0) // first_mb_in_slice
  w.ue(7) // slice_type: I, every slice of the picture
  w.ue(0) // pic_parameter_set_id
  w.u(LOG2_MAX_FRAME_NUM, 0) // frame_num
  w.ue(0) // idr_pic_id
  w.bit(0) // no_output_of_prior_pics_flag
  w.bit(0) // long_term_reference_flag
  w.se(0) // slice_qp_delta
  w.ue(1) // disable_deblocking_filter_idc
  for (let mbY = 0; mbY < heightMbs; mbY++) {
    for (let mbX = 0; mbX < widthMbs; mbX++) {
      w.ue(I_PCM_IN_I_SLICE)
      writePcm(w, frame, width, mbX, mbY)
    }
  }
  w.trailing()
  return nal(3, 5, w.done())
}

const predicted = (previous: Frame, frame: Frame, frameNum: number, width: number, widthMbs: number, heightMbs: number) => {
  const w = new BitWriter()
  w.ue(0) // first_mb_in_slice
  w.ue(5) // slice_type: P, every slice of the picture
  w.ue(0) // pic_parameter_set_id
  w.u(LOG2_MAX_FRAME_NUM, frameNum % (1 << LOG2_MAX_FRAME_NUM))
  w.bit(0) // num_ref_idx_active_override_flag
  w.bit(0) // ref_pic_list_modification_flag_l0
  w.bit(0) // adaptive_ref_pic_marking_mode_flag: sliding window
  w.se(0) // slice_qp_delta
  w.ue(1) // disable_deblocking_filter_idc
  let skipped = 0
  for (let mbY = 0; mbY < heightMbs; mbY++) {
    for (let mbX = 0; mbX < widthMbs; mbX++) {
      if (unchanged(previous, frame, width, mbX, mbY)) {
        skipped++
        continue
      }
      w.ue(skipped) // mb_skip_run
      skipped = 0
      w.ue(I_PCM_IN_P_SLICE)
      writePcm(w, frame, width, mbX, mbY)
    }
  }
  if (skipped > 0) w.ue(skipped)
  w.trailing()
  return nal(2, 1, w.done())
}

const lengthPrefixed = (unit: Uint8Array): Uint8Array => {
  const out = new Uint8Array(4 + unit.length)
  new DataView(out.buffer).setUint32(0, unit.length)
  out.set(unit, 4)
  return out
}

/**
 * Encodes frames of `width` x `height` (multiples of 16). Luma and chroma samples should stay
 * within 1..255, as early decoders require of PCM samples.
 */
export const encode = (width: number, height: number, frames: Iterable<Frame>): Stream => {
  if (width % 16 !== 0 || height % 16 !== 0 || width === 0 || height === 0) {
    throw new RangeError(`H264.encode: ${width}x${height} is not a positive multiple of 16 both ways`)
  }
  const widthMbs = width / 16
  const heightMbs = height / 16
  const samples: Array<Uint8Array> = []
  const sync: Array<boolean> = []
  let previous: Frame | undefined
  for (const frame of frames) {
    const unit =
      previous === undefined
        ? idr(frame, width, widthMbs, heightMbs)
        : predicted(previous, frame, samples.length, width, widthMbs, heightMbs)
    samples.push(lengthPrefixed(unit))
    sync.push(previous === undefined)
    previous = frame
  }
  return { sps: sps(widthMbs, heightMbs), pps: pps(), samples, sync }
}
