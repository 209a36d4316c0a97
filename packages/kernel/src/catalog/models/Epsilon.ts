/** The epsilon 3.1 video family (low-price channel): Pro and Fast, from text, images or start/end frames. */
import { define } from "../ModelDefinition.ts"
import * as ModelField from "../ModelField.ts"
import { VRES } from "./OptionSets.ts"

type Tier = "pro" | "fast"
const label = (tier: Tier) => (tier === "pro" ? "Pro" : "Fast")

const prompt = ModelField.prompt({ minLength: 5, maxLength: 8000 })
const resolution = ModelField.enumOf(VRES, { required: true, default: "720p", description: "Video resolution." })
const DURATION = "Length of the video in seconds, as a string; only 8 is offered."
/** The start-end models state the default "8"; the others state none, so theirs stays absent. */
const durationWithDefault = ModelField.enumOf(["8"], { default: "8", description: DURATION })
const duration = ModelField.enumOf(["8"], { description: DURATION })
/**
 * The spec gives the set (16:9 or 9:16) for every epsilon model but fast image-to-video, where
 * it only states the default 16:9; the same two ratios are assumed there.
 */
const aspectRatio = (defaultRatio: "16:9" | "9:16") =>
  ModelField.enumOf(["16:9", "9:16"], { required: true, default: defaultRatio, description: "Aspect ratio of the video." })

const startEnd = (tier: Tier) =>
  define({
    slug: `epsilon-3-1-${tier}-start-end-to-video-channel-low-price`,
    category: "video",
    title: `Epsilon 3.1 ${label(tier)} start and end frames to video (low price)`,
    description: `Generate an 8 second video that starts on one image and optionally ends on another with Epsilon 3.1 ${label(
      tier
    )}.`,
    outputs: "1 video asset",
    fields: {
      prompt,
      firstFrameUrl: ModelField.mediaUrl({ required: true, description: "Image of the first frame." }),
      lastFrameUrl: ModelField.mediaUrl({ description: "Image of the last frame." }),
      aspectRatio: aspectRatio("9:16"),
      duration: durationWithDefault,
      resolution
    }
  })

const textToVideo = (tier: Tier) =>
  define({
    slug: `epsilon-3-1-${tier}-text-to-video-channel-low-price`,
    category: "video",
    title: `Epsilon 3.1 ${label(tier)} text to video (low price)`,
    description: `Generate an 8 second video from a text prompt with Epsilon 3.1 ${label(tier)}.`,
    outputs: "1 video asset",
    fields: { prompt, aspectRatio: aspectRatio("9:16"), duration, resolution }
  })

export const epsilon = [
  startEnd("pro"),
  startEnd("fast"),
  define({
    slug: "epsilon-3-1-pro-image-to-video-channel-low-price",
    category: "video",
    title: "Epsilon 3.1 Pro image to video (low price)",
    description: "Animate an image into an 8 second video following a text prompt with Epsilon 3.1 Pro.",
    outputs: "1 video asset",
    fields: {
      prompt,
      imageUrl: ModelField.mediaUrl({ required: true, description: "Source image." }),
      aspectRatio: aspectRatio("16:9"),
      duration,
      resolution
    }
  }),
  define({
    slug: "epsilon-3-1-fast-image-to-video-channel-low-price",
    category: "video",
    title: "Epsilon 3.1 Fast image to video (low price)",
    description: "Animate up to 3 images into an 8 second video following a text prompt with Epsilon 3.1 Fast.",
    outputs: "1 video asset",
    fields: {
      prompt,
      imageUrls: ModelField.mediaUrls({ required: true, maxItems: 3, description: "Source images, up to 3." }),
      aspectRatio: aspectRatio("16:9"),
      duration,
      resolution
    }
  }),
  textToVideo("pro"),
  textToVideo("fast")
]
