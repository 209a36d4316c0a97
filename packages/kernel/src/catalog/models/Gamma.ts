/** The gamma family: Imagine 2.0 and Imagine Image (images), Imagine v1.5 (video). */
import { define } from "../ModelDefinition.ts"
import * as ModelField from "../ModelField.ts"

const NUM_IMAGES = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"] as const

const imagineModel = ModelField.enumOf(["g-3", "g-4", "g-4.1", "g-4.2"], {
  required: true,
  default: "g-4.2",
  description: "Model version."
})

export const gammaImage = [
  define({
    slug: "gamma-imagine-2-0-text-to-image-economy",
    category: "image",
    title: "Gamma Imagine 2.0 text to image (economy)",
    description: "Generate 1 to 12 images from a text prompt with Gamma Imagine 2.0; billed per delivered image.",
    outputs: "1 to 12 image assets (numImages), billed per image delivered",
    fields: {
      prompt: ModelField.prompt({ maxLength: 4000 }),
      aspectRatio: ModelField.enumOf(["1:1", "2:3", "3:2", "3:4", "4:3", "9:16", "16:9"], {
        default: "1:1",
        description: "Aspect ratio of the output."
      }),
      numImages: ModelField.enumOf(NUM_IMAGES, {
        required: true,
        default: "1",
        description: "How many images to generate, as a string. Only delivered images are charged."
      })
    }
  }),
  define({
    slug: "gamma-imagine-image-text-to-image-economy",
    category: "image",
    title: "Gamma Imagine Image text to image (economy)",
    description: "Generate an image from a text prompt with a chosen Gamma Imagine Image version.",
    outputs: "image assets",
    fields: {
      model: imagineModel,
      prompt: ModelField.prompt(),
      aspectRatio: ModelField.enumOf(["960x960", "720x1280", "1280x720", "1168x784", "784x1168"], {
        description: "Output size in pixels."
      })
    }
  }),
  define({
    slug: "gamma-imagine-image-image-to-image-economy",
    category: "image",
    title: "Gamma Imagine Image image to image (economy)",
    description: "Transform an image following a text prompt with a chosen Gamma Imagine Image version.",
    outputs: "image assets",
    fields: {
      model: imagineModel,
      prompt: ModelField.prompt(),
      imageUrl: ModelField.mediaUrl({ description: "Source image." })
    }
  })
]

const v15Prompt = ModelField.prompt({ minLength: 1, maxLength: 20000 })
const v15AspectRatios = ["2:3", "3:2", "1:1", "16:9", "9:16"] as const
const v15Resolutions = ["720p", "480p"] as const
const v15Duration = ModelField.integer({
  minimum: 6,
  maximum: 15,
  required: true,
  default: 6,
  description: "Length of the video in seconds."
})

export const gammaVideo = [
  define({
    slug: "gamma-imagine-v1-5-text-to-video-economy",
    category: "video",
    title: "Gamma Imagine v1.5 text to video (economy)",
    description: "Generate a 6 to 15 second video from a text prompt with Gamma Imagine v1.5.",
    outputs: "1 video asset",
    fields: {
      prompt: v15Prompt,
      aspectRatio: ModelField.enumOf(v15AspectRatios, {
        required: true,
        default: "2:3",
        description: "Aspect ratio of the video."
      }),
      resolution: ModelField.enumOf(v15Resolutions, {
        required: true,
        default: "720p",
        description: "Video resolution."
      }),
      duration: v15Duration
    }
  }),
  define({
    slug: "gamma-imagine-v1-5-image-to-video-economy",
    category: "video",
    title: "Gamma Imagine v1.5 image to video (economy)",
    description: "Animate up to 7 images into a 6 to 15 second video following a text prompt with Gamma Imagine v1.5.",
    outputs: "1 video asset",
    fields: {
      prompt: v15Prompt,
      aspectRatio: ModelField.enumOf(v15AspectRatios, {
        required: true,
        default: "16:9",
        description: "Aspect ratio of the video."
      }),
      imageUrls: ModelField.mediaUrls({ maxItems: 7, description: "Reference images, up to 7." }),
      resolution: ModelField.enumOf(v15Resolutions, {
        required: true,
        default: "480p",
        description: "Video resolution."
      }),
      duration: v15Duration
    }
  })
]
