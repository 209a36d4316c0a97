/** The alpha image family: Pro (AR10, resolution) and 2 / 2 Lite (AR14). */
import { define } from "../ModelDefinition.ts"
import * as ModelField from "../ModelField.ts"
import { AR10, AR14, RES } from "./OptionSets.ts"

const imageUrls = ModelField.mediaUrls({ required: true, maxItems: 10, description: "Source images, up to 10." })
const boundedPrompt = ModelField.prompt({ minLength: 1, maxLength: 20000 })
const resolution = ModelField.enumOf(RES, { required: true, default: "1k", description: "Output resolution." })
const ar14 = ModelField.enumOf(AR14, { default: "9:16", description: "Aspect ratio of the output." })

export const alpha = [
  define({
    slug: "alpha-pro-text-to-image-economy",
    category: "image",
    title: "Alpha Pro text to image (economy)",
    description: "Generate an image from a text prompt with Alpha Pro, at 1k, 2k or 4k.",
    outputs: "image assets",
    fields: {
      prompt: boundedPrompt,
      aspectRatio: ModelField.enumOf(AR10, { default: "9:16", description: "Aspect ratio of the output." }),
      resolution
    }
  }),
  define({
    slug: "alpha-pro-edit-economy",
    category: "image",
    title: "Alpha Pro image edit (economy)",
    description: "Edit or combine up to 10 images following a text prompt with Alpha Pro.",
    outputs: "image assets",
    fields: {
      imageUrls,
      prompt: boundedPrompt,
      aspectRatio: ModelField.enumOf(AR10, {
        default: "3:4",
        description:
          "Aspect ratio of the output. The upstream model adapts the size to the input when no " +
          "ratio reaches it, but the catalog applies its defaults, so omitting it means 3:4."
      }),
      resolution
    }
  }),
  define({
    slug: "alpha-2-lite-image-to-image-economy",
    category: "image",
    title: "Alpha 2 Lite image to image (economy)",
    description: "Transform up to 10 images following a text prompt with Alpha 2 Lite.",
    outputs: "image assets",
    fields: { imageUrls, prompt: boundedPrompt, aspectRatio: ar14 }
  }),
  define({
    slug: "alpha-2-lite-text-to-image-economy",
    category: "image",
    title: "Alpha 2 Lite text to image (economy)",
    description: "Generate an image from a text prompt with Alpha 2 Lite.",
    outputs: "image assets",
    fields: { prompt: ModelField.prompt(), aspectRatio: ar14 }
  }),
  define({
    slug: "alpha-2-image-to-image-economy",
    category: "image",
    title: "Alpha 2 image to image (economy)",
    description: "Transform up to 10 images following a text prompt with Alpha 2, at 1k, 2k or 4k.",
    outputs: "image assets",
    fields: { imageUrls, prompt: boundedPrompt, aspectRatio: ar14, resolution }
  }),
  define({
    slug: "alpha-2-text-to-image-economy",
    category: "image",
    title: "Alpha 2 text to image (economy)",
    description: "Generate an image from a text prompt with Alpha 2, at 1k, 2k or 4k.",
    outputs: "image assets",
    fields: { prompt: ModelField.prompt(), aspectRatio: ar14, resolution }
  })
]
