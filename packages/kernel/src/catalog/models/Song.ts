/** The song family: single songs from a description, custom songs from lyrics, and lyrics alone. */
import { define } from "../ModelDefinition.ts"
import * as ModelField from "../ModelField.ts"
import type { TextOptions } from "../ModelField.ts"

const TWO_SONGS = "2 audio assets (two alternative songs)"

const single = (version: string, label: string, title: TextOptions) =>
  define({
    slug: `song-single-${version}`,
    category: "audio",
    title: `Song ${label} single song`,
    description:
      `Compose a song (music with vocals, or instrumental) from a short description with Song ${label}; ` +
      "two alternatives per task.",
    outputs: TWO_SONGS,
    fields: {
      description: ModelField.text({
        required: true,
        minLength: 1,
        maxLength: 400,
        description: "What the song is about and how it sounds."
      }),
      title: ModelField.text({ ...title, description: "Song title; leave empty to let the model write one." }),
      make_instrumental: ModelField.enumOf(["true", "false"], {
        default: "false",
        description: '"true" for music without vocals, as a string.'
      })
    }
  })

const custom = (version: string, label: string, tags: TextOptions) =>
  define({
    slug: `song-custom-${version}`,
    category: "audio",
    title: `Song ${label} custom song`,
    description:
      `Compose a song (music) to your own lyrics, title and style tags with Song ${label}; ` + "two alternatives per task.",
    outputs: TWO_SONGS,
    fields: {
      title: ModelField.text({ required: true, minLength: 1, maxLength: 80, description: "Song title." }),
      prompt: ModelField.text({
        required: true,
        minLength: 1,
        maxLength: 5000,
        description: "Lyrics; may contain structure tags such as [Verse], [Chorus], [Bridge]."
      }),
      tags: ModelField.text({ required: true, ...tags, description: "Comma-separated style descriptors." })
    }
  })

export const song = [
  single("v5-5", "v5.5", { minLength: 0, maxLength: 80 }),
  single("v5", "v5", { maxLength: 80 }),
  single("v4-5", "v4.5", { maxLength: 80, default: "" }),
  custom("v5-5", "v5.5", { minLength: 1, maxLength: 1000 }),
  custom("v5", "v5", { maxLength: 1000 }),
  custom("v4-5", "v4.5", { maxLength: 1000 }),
  define({
    slug: "song-lyrics",
    category: "text",
    title: "Song lyrics",
    description: "Write song lyrics on a topic, with structure labels, a title and style tags.",
    outputs: "1 text asset (lyrics in assets[].text)",
    fields: {
      prompt: ModelField.text({ required: true, minLength: 1, maxLength: 500, description: "Topic of the lyrics." })
    }
  })
]
