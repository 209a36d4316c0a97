/** The picgen image family: 2.5 (Sunburst and Flare share their fields) and 2.0. */
import { define } from "../ModelDefinition.ts"
import * as ModelField from "../ModelField.ts"
import { AR10, RES } from "./OptionSets.ts"

/**
 * The spec gives these prompts "1-20000, default empty string". An empty default would fail
 * the 1-character minimum, so it is not applied: the prompt must be sent.
 */
const prompt = ModelField.prompt({ minLength: 1, maxLength: 20000 })
const imageUrls = ModelField.mediaUrls({ required: true, maxItems: 10, description: "Source images, up to 10." })
const NOT_GUARANTEED = "2k and 4k output is not guaranteed; most results are 1k."

const v25AspectRatio = ModelField.enumOf(AR10, { default: "16:9", description: "Aspect ratio of the output." })
const v25Resolution = ModelField.enumOf(RES, { default: "1k", description: "Output resolution." })
const v25TextToImage = { prompt, aspectRatio: v25AspectRatio, resolution: v25Resolution }
const v25ImageToImage = { prompt, imageUrls, aspectRatio: v25AspectRatio, resolution: v25Resolution }

const v25 = (variant: "sunburst" | "flare", label: string) => [
  define({
    slug: `picgen-2-5-${variant}-image-to-image-economy`,
    category: "image",
    title: `Picgen 2.5 ${label} image to image (economy)`,
    description: `Transform up to 10 images following a text prompt with Picgen 2.5 ${label}.`,
    outputs: "image assets",
    fields: v25ImageToImage
  }),
  define({
    slug: `picgen-2-5-${variant}-text-to-image-economy`,
    category: "image",
    title: `Picgen 2.5 ${label} text to image (economy)`,
    description: `Generate an image from a text prompt with Picgen 2.5 ${label}.`,
    outputs: "image assets",
    fields: v25TextToImage
  })
]

const v20Resolution = ModelField.enumOf(RES, { default: "1k", description: `Output resolution. ${NOT_GUARANTEED}` })

export const picgen = [
  ...v25("sunburst", "Sunburst"),
  ...v25("flare", "Flare"),
  define({
    slug: "picgen-2-0-text-to-image-economy",
    category: "image",
    title: "Picgen 2.0 text to image (economy)",
    description: "Generate an image from a text prompt with Picgen 2.0, with extreme aspect ratios up to 1:3.",
    outputs: "image assets",
    fields: {
      prompt,
      aspectRatio: ModelField.enumOf(
        ["1:1", "3:2", "2:3", "5:4", "4:5", "16:9", "9:16", "21:9", "3:4", "4:3", "9:21", "1:2", "2:1", "1:3", "3:1"],
        { default: "16:9", description: "Aspect ratio of the output." }
      ),
      resolution: v20Resolution
    }
  }),
  define({
    slug: "picgen-2-0-edit-economy",
    category: "image",
    title: "Picgen 2.0 image edit (economy)",
    description: "Edit or combine up to 10 images following a text prompt with Picgen 2.0.",
    outputs: "image assets",
    fields: {
      prompt,
      imageUrls,
      aspectRatio: ModelField.enumOf(
        ["1:1", "2:3", "3:2", "4:5", "5:4", "4:3", "3:4", "16:9", "9:16", "21:9", "9:21", "2:1", "1:2", "3:1", "1:3"],
        { default: "16:9", description: "Aspect ratio of the output." }
      ),
      resolution: v20Resolution
    }
  })
]
