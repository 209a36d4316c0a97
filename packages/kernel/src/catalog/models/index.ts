/** The 33 models of the spec, by category (image, video, audio and text), then by family. */
import type { ModelDefinition } from "../ModelDefinition.ts"
import { alpha } from "./alpha.ts"
import { delta } from "./delta.ts"
import { epsilon } from "./epsilon.ts"
import { gammaImage, gammaVideo } from "./gamma.ts"
import { picgen } from "./picgen.ts"
import { song } from "./song.ts"

export const models: ReadonlyArray<ModelDefinition> = [
  ...alpha,
  ...picgen,
  ...gammaImage,
  ...delta,
  ...gammaVideo,
  ...epsilon,
  ...song
]
