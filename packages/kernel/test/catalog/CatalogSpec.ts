/**
 * The spec's "Input schemas per model" tables, transcribed independently of src/models so that
 * the Catalog tests compare the catalog against the spec rather than against itself.
 */
import { expect } from "@effect/vitest"
import type { Catalog } from "../../src/index.ts"

export type ExpectedField = Omit<Catalog.FieldInfo, "description">

const AR10 = ["1:1", "16:9", "9:16", "4:3", "3:4", "3:2", "2:3", "5:4", "4:5", "21:9"]
const AR14 = [...AR10, "1:4", "4:1", "1:8", "8:1"]
const RES = ["1k", "2k", "4k"]
const VRES = ["720p", "1080p", "4k"]

type Extra = Partial<Omit<ExpectedField, "name" | "type" | "media">>
const str = (name: string, extra: Extra = {}): ExpectedField => ({
  name,
  type: "string",
  media: false,
  required: false,
  ...extra
})
const opt = (name: string, options: ReadonlyArray<string>, extra: Extra = {}): ExpectedField => str(name, { options, ...extra })
const media = (name: string, required: boolean): ExpectedField => ({ name, type: "string", media: true, required })
const mediaList = (maxItems: number, required: boolean, allowedCounts?: ReadonlyArray<number>): ExpectedField => ({
  name: "imageUrls",
  type: "array",
  items: "string",
  media: true,
  required,
  maxItems,
  ...(required ? { minItems: 1 } : {}),
  ...(allowedCounts === undefined ? {} : { allowedCounts })
})
const req = { required: true }
const prompt = (minLength?: number, maxLength?: number, extra: Extra = {}) =>
  str("prompt", {
    required: true,
    ...(minLength === undefined ? {} : { minLength }),
    ...(maxLength === undefined ? {} : { maxLength }),
    ...extra
  })

export interface ExpectedModel {
  readonly slug: string
  readonly category: Catalog.Category
  readonly fields: ReadonlyArray<ExpectedField>
}

const model = (slug: string, category: Catalog.Category, fields: ReadonlyArray<ExpectedField>): ExpectedModel => ({
  slug,
  category,
  fields
})

const picgen25 = (slug: string, withImages: boolean) =>
  model(slug, "image", [
    prompt(1, 20000),
    ...(withImages ? [mediaList(10, true)] : []),
    opt("aspectRatio", AR10, { default: "16:9" }),
    opt("resolution", RES, { default: "1k" })
  ])

const PICGEN20_T2I = [
  ...["1:1", "3:2", "2:3", "5:4", "4:5", "16:9", "9:16", "21:9"],
  ...["3:4", "4:3", "9:21", "1:2", "2:1", "1:3", "3:1"]
]
const PICGEN20_EDIT = [
  ...["1:1", "2:3", "3:2", "4:5", "5:4", "4:3", "3:4", "16:9"],
  ...["9:16", "21:9", "9:21", "2:1", "1:2", "3:1", "1:3"]
]
const G_MODEL = opt("model", ["g-3", "g-4", "g-4.1", "g-4.2"], { required: true, default: "g-4.2" })
const V15_AR = ["2:3", "3:2", "1:1", "16:9", "9:16"]
const V15_DURATION: ExpectedField = {
  name: "duration",
  type: "integer",
  media: false,
  required: true,
  minimum: 6,
  maximum: 15,
  default: 6
}
const DELTA_DURATION = opt("duration", ["4", "6", "8", "10"], { required: true, default: "6" })
const DELTA_RES = opt("resolution", VRES, { required: true, default: "720p" })
const DELTA_AR = opt("aspectRatio", ["16:9", "9:16"], { default: "16:9" })
const EPS_PROMPT = prompt(5, 8000)
const EPS_AR = (def: string) => opt("aspectRatio", ["16:9", "9:16"], { required: true, default: def })
const EPS_DURATION = opt("duration", ["8"])
const EPS_RES = opt("resolution", VRES, { required: true, default: "720p" })
const startEnd = (slug: string) =>
  model(slug, "video", [
    EPS_PROMPT,
    media("firstFrameUrl", true),
    media("lastFrameUrl", false),
    EPS_AR("9:16"),
    opt("duration", ["8"], { default: "8" }),
    EPS_RES
  ])
const epsT2V = (slug: string) => model(slug, "video", [EPS_PROMPT, EPS_AR("9:16"), EPS_DURATION, EPS_RES])
const INSTRUMENTAL = opt("make_instrumental", ["true", "false"], { default: "false" })
const single = (slug: string, title: ExpectedField) =>
  model(slug, "audio", [str("description", { required: true, minLength: 1, maxLength: 400 }), title, INSTRUMENTAL])
const custom = (slug: string, tags: ExpectedField) =>
  model(slug, "audio", [
    str("title", { required: true, minLength: 1, maxLength: 80 }),
    str("prompt", { required: true, minLength: 1, maxLength: 5000 }),
    tags
  ])

export const expectedModels: ReadonlyArray<ExpectedModel> = [
  model("alpha-pro-text-to-image-economy", "image", [
    prompt(1, 20000),
    opt("aspectRatio", AR10, { default: "9:16" }),
    opt("resolution", RES, { ...req, default: "1k" })
  ]),
  model("alpha-pro-edit-economy", "image", [
    mediaList(10, true),
    prompt(1, 20000),
    opt("aspectRatio", AR10, { default: "3:4" }),
    opt("resolution", RES, { ...req, default: "1k" })
  ]),
  model("alpha-2-lite-image-to-image-economy", "image", [
    mediaList(10, true),
    prompt(1, 20000),
    opt("aspectRatio", AR14, { default: "9:16" })
  ]),
  model("alpha-2-lite-text-to-image-economy", "image", [prompt(), opt("aspectRatio", AR14, { default: "9:16" })]),
  model("alpha-2-image-to-image-economy", "image", [
    mediaList(10, true),
    prompt(1, 20000),
    opt("aspectRatio", AR14, { default: "9:16" }),
    opt("resolution", RES, { ...req, default: "1k" })
  ]),
  model("alpha-2-text-to-image-economy", "image", [
    prompt(),
    opt("aspectRatio", AR14, { default: "9:16" }),
    opt("resolution", RES, { ...req, default: "1k" })
  ]),
  picgen25("picgen-2-5-sunburst-image-to-image-economy", true),
  picgen25("picgen-2-5-sunburst-text-to-image-economy", false),
  picgen25("picgen-2-5-flare-image-to-image-economy", true),
  picgen25("picgen-2-5-flare-text-to-image-economy", false),
  model("gamma-imagine-2-0-text-to-image-economy", "image", [
    prompt(undefined, 4000),
    opt("aspectRatio", ["1:1", "2:3", "3:2", "3:4", "4:3", "9:16", "16:9"], { default: "1:1" }),
    opt("numImages", ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"], { ...req, default: "1" })
  ]),
  model("picgen-2-0-text-to-image-economy", "image", [
    prompt(1, 20000),
    opt("aspectRatio", PICGEN20_T2I, { default: "16:9" }),
    opt("resolution", RES, { default: "1k" })
  ]),
  model("picgen-2-0-edit-economy", "image", [
    prompt(1, 20000),
    mediaList(10, true),
    opt("aspectRatio", PICGEN20_EDIT, { default: "16:9" }),
    opt("resolution", RES, { default: "1k" })
  ]),
  model("gamma-imagine-image-text-to-image-economy", "image", [
    G_MODEL,
    prompt(),
    opt("aspectRatio", ["960x960", "720x1280", "1280x720", "1168x784", "784x1168"])
  ]),
  model("gamma-imagine-image-image-to-image-economy", "image", [G_MODEL, prompt(), media("imageUrl", false)]),
  model("delta-omni-flash-image-to-video-economy", "video", [
    prompt(1, 2048, { default: expect.any(String) }),
    mediaList(3, true, [1, 3]),
    DELTA_DURATION,
    DELTA_RES,
    DELTA_AR
  ]),
  model("delta-omni-flash-text-to-video-economy", "video", [
    prompt(1, 2048, { default: expect.any(String) }),
    DELTA_DURATION,
    DELTA_RES,
    DELTA_AR
  ]),
  model("delta-omni-flash-video-edit-economy", "video", [
    prompt(1, 2048),
    media("videoUrl", true),
    mediaList(3, false, [1, 3]),
    DELTA_RES,
    DELTA_AR
  ]),
  model("gamma-imagine-v1-5-text-to-video-economy", "video", [
    prompt(1, 20000),
    opt("aspectRatio", V15_AR, { ...req, default: "2:3" }),
    opt("resolution", ["720p", "480p"], { ...req, default: "720p" }),
    V15_DURATION
  ]),
  model("gamma-imagine-v1-5-image-to-video-economy", "video", [
    prompt(1, 20000),
    opt("aspectRatio", V15_AR, { ...req, default: "16:9" }),
    mediaList(7, false),
    opt("resolution", ["720p", "480p"], { ...req, default: "480p" }),
    V15_DURATION
  ]),
  startEnd("epsilon-3-1-pro-start-end-to-video-channel-low-price"),
  startEnd("epsilon-3-1-fast-start-end-to-video-channel-low-price"),
  model("epsilon-3-1-pro-image-to-video-channel-low-price", "video", [
    EPS_PROMPT,
    media("imageUrl", true),
    EPS_AR("16:9"),
    EPS_DURATION,
    EPS_RES
  ]),
  model("epsilon-3-1-fast-image-to-video-channel-low-price", "video", [
    EPS_PROMPT,
    mediaList(3, true),
    EPS_AR("16:9"),
    EPS_DURATION,
    EPS_RES
  ]),
  epsT2V("epsilon-3-1-pro-text-to-video-channel-low-price"),
  epsT2V("epsilon-3-1-fast-text-to-video-channel-low-price"),
  single("song-single-v5-5", str("title", { minLength: 0, maxLength: 80 })),
  single("song-single-v5", str("title", { maxLength: 80 })),
  single("song-single-v4-5", str("title", { maxLength: 80, default: "" })),
  custom("song-custom-v5-5", str("tags", { required: true, minLength: 1, maxLength: 1000 })),
  custom("song-custom-v5", str("tags", { required: true, maxLength: 1000 })),
  custom("song-custom-v4-5", str("tags", { required: true, maxLength: 1000 })),
  model("song-lyrics", "text", [str("prompt", { required: true, minLength: 1, maxLength: 500 })])
]
