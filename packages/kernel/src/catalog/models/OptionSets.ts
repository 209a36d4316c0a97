/** The option sets the spec names once and reuses across models. */

export const AR10 = ["1:1", "16:9", "9:16", "4:3", "3:4", "3:2", "2:3", "5:4", "4:5", "21:9"] as const
export const AR14 = [...AR10, "1:4", "4:1", "1:8", "8:1"] as const
/** Image resolution. */
export const RES = ["1k", "2k", "4k"] as const
/** Video resolution. */
export const VRES = ["720p", "1080p", "4k"] as const
