/**
 * The simulated provider's words: song titles, style tags and lyrics with structure labels,
 * drawn from small word lists by the seed and seasoned with words of the caller's topic.
 */
import * as Seed from "./Seed.ts"

const SUBJECTS = ["the city", "the river", "your voice", "the night", "this road", "the morning", "the tide", "our hearts"]
const VERBS = [
  "calls me home",
  "keeps on turning",
  "burns so bright",
  "won't let go",
  "fades to gold",
  "sings along",
  "runs away",
  "holds the light"
]
const IMAGES = [
  "neon rain",
  "paper stars",
  "open skies",
  "silver lines",
  "summer haze",
  "falling snow",
  "distant drums",
  "broken clocks"
]
const GENRES = ["indie pop", "synthwave", "folk", "lo-fi", "soul", "dream pop", "acoustic", "disco", "ambient", "rock"]
const MOODS = ["warm", "melancholic", "upbeat", "dreamy", "energetic", "mellow", "nostalgic", "bright"]
const VOICES = ["female vocals", "male vocals", "choir", "whispered vocals"]

const STOPWORDS = new Set([
  "about",
  "after",
  "also",
  "from",
  "have",
  "into",
  "just",
  "like",
  "make",
  "over",
  "song",
  "that",
  "their",
  "them",
  "then",
  "there",
  "they",
  "this",
  "through",
  "very",
  "what",
  "when",
  "where",
  "which",
  "while",
  "with",
  "your"
])

/** Up to `count` distinct words of four letters or more from the caller's text, common words left out. */
export const topicWords = (text: string, count: number): ReadonlyArray<string> =>
  [...new Set(text.toLowerCase().match(/\p{L}{4,}/gu) ?? [])].filter((word) => !STOPWORDS.has(word)).slice(0, count)

const capitalize = (text: string) => text.replace(/(^|\s)\p{L}/gu, (c) => c.toUpperCase())
const sentence = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)

export const title = (seed: string, topic: string): string => {
  const random = Seed.random(seed, "title")
  const words = topicWords(topic, 3)
  return capitalize(words.length > 0 ? `${random.pick(IMAGES)} of ${random.pick(words)}` : random.pick(IMAGES))
}

export const tags = (seed: string, instrumental = false): string => {
  const random = Seed.random(seed, "tags")
  return [random.pick(GENRES), random.pick(MOODS), instrumental ? "instrumental" : random.pick(VOICES)].join(", ")
}

const line = (random: Seed.Random, words: ReadonlyArray<string>) => {
  const subject = words.length > 0 && random.next() < 0.4 ? random.pick(words) : random.pick(SUBJECTS)
  return sentence(
    random.next() < 0.5 ? `${subject} ${random.pick(VERBS)}` : `under ${random.pick(IMAGES)}, ${subject} ${random.pick(VERBS)}`
  )
}

const stanza = (random: Seed.Random, words: ReadonlyArray<string>, lines: number) =>
  Array.from({ length: lines }, () => line(random, words)).join("\n")

/** A title line, a style line, then [Verse] / [Chorus] / [Bridge] / [Outro] sections. */
export const lyrics = (seed: string, topic: string): string => {
  const random = Seed.random(seed, "lyrics")
  const words = topicWords(topic, 6)
  const chorus = stanza(random, words, 4)
  return [
    `Title: ${title(seed, topic)}`,
    `Style: ${tags(seed)}`,
    "",
    "[Verse 1]",
    stanza(random, words, 4),
    "",
    "[Chorus]",
    chorus,
    "",
    "[Verse 2]",
    stanza(random, words, 4),
    "",
    "[Chorus]",
    chorus,
    "",
    "[Bridge]",
    stanza(random, words, 2),
    "",
    "[Outro]",
    line(random, words),
    ""
  ].join("\n")
}
