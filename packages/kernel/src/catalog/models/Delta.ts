/** The delta video family: Omni Flash from text, from images, and video edit. */
import { define } from "../ModelDefinition.ts"
import * as ModelField from "../ModelField.ts"
import { VRES } from "./OptionSets.ts"

const duration = ModelField.enumOf(["4", "6", "8", "10"], {
  required: true,
  default: "6",
  description: "Length of the video in seconds, as a string."
})
const resolution = ModelField.enumOf(VRES, { required: true, default: "720p", description: "Video resolution." })
const aspectRatio = ModelField.enumOf(["16:9", "9:16"], { default: "16:9", description: "Aspect ratio of the video." })
const IMAGE_COUNTS = "1 image, or 3 for reference fusion; 2 is not supported."

export const delta = [
  define({
    slug: "delta-omni-flash-image-to-video-economy",
    category: "video",
    title: "Delta Omni Flash image to video (economy)",
    description: "Animate 1 image, or fuse 3 reference images, into a 4 to 10 second video with Delta Omni Flash.",
    outputs: "1 video asset",
    fields: {
      prompt: ModelField.prompt({
        minLength: 1,
        maxLength: 2048,
        default: "Bring the image to life with natural, smooth motion and a slow, steady camera movement."
      }),
      imageUrls: ModelField.mediaUrls({
        required: true,
        maxItems: 3,
        allowedCounts: [1, 3],
        description: `Source images: ${IMAGE_COUNTS}`
      }),
      duration,
      resolution,
      aspectRatio
    }
  }),
  define({
    slug: "delta-omni-flash-text-to-video-economy",
    category: "video",
    title: "Delta Omni Flash text to video (economy)",
    description: "Generate a 4 to 10 second video from a text prompt with Delta Omni Flash.",
    outputs: "1 video asset",
    fields: {
      prompt: ModelField.prompt({
        minLength: 1,
        maxLength: 2048,
        default: "A cinematic wide shot of ocean waves rolling onto a beach at sunset, soft golden light, " + "gentle camera pan."
      }),
      duration,
      resolution,
      aspectRatio
    }
  }),
  define({
    slug: "delta-omni-flash-video-edit-economy",
    category: "video",
    title: "Delta Omni Flash video edit (economy)",
    description: "Edit a video following a text prompt, optionally guided by 1 or 3 images, with Delta Omni Flash.",
    outputs: "1 video asset",
    fields: {
      prompt: ModelField.prompt({ minLength: 1, maxLength: 2048 }),
      videoUrl: ModelField.mediaUrl({
        required: true,
        description: "The video to edit (dynamic reference; may be combined with images)."
      }),
      imageUrls: ModelField.mediaUrls({
        maxItems: 3,
        allowedCounts: [1, 3],
        description: `Reference images: ${IMAGE_COUNTS}`
      }),
      resolution,
      aspectRatio
    }
  })
]
