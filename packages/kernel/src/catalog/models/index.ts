/** The 33 models of the spec, by category (image, video, audio and text), then by family. */
import type { ModelDefinition } from "../ModelDefinition.ts"
import { alpha } from "./Alpha.ts"
import { delta } from "./Delta.ts"
import { epsilon } from "./Epsilon.ts"
import { gammaImage, gammaVideo } from "./Gamma.ts"
import { picgen } from "./Picgen.ts"
import { song } from "./Song.ts"

export const models: ReadonlyArray<ModelDefinition> = [
  ...alpha,
  ...picgen,
  ...gammaImage,
  ...delta,
  ...gammaVideo,
  ...epsilon,
  ...song
]
