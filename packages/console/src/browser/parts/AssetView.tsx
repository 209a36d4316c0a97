/**
 * One result of a task, previewed by type: an image, a video player, an audio player, or the
 * text itself; with a download link. Under a session the elements load the result's URL
 * directly (the cookie goes with it, and a player seeks with Range requests); under an API key
 * the file is fetched with the key and shown from memory.
 */
import { useEffect, useState } from "preact/hooks"
import type { Task } from "@taskmeter/kernel"
import { currentCredential, send } from "../api.ts"
import { ErrorNotice } from "./Notice.tsx"

const useSource = (url: string | undefined): { readonly src: string | undefined; readonly error: unknown } => {
  const direct = currentCredential()?.kind !== "key"
  const [state, setState] = useState<{ src: string | undefined; error: unknown }>({
    src: direct ? url : undefined,
    error: undefined
  })
  useEffect(() => {
    if (url === undefined || direct) return setState({ src: url, error: undefined })
    let objectUrl: string | undefined
    let live = true
    send(url)
      .then((response) => response.blob())
      .then((blob) => {
        objectUrl = URL.createObjectURL(blob)
        if (live) setState({ src: objectUrl, error: undefined })
      })
      .catch((error: unknown) => live && setState({ src: undefined, error }))
    return () => {
      live = false
      if (objectUrl !== undefined) URL.revokeObjectURL(objectUrl)
    }
  }, [url, direct])
  return state
}

const extensionOf: Record<Task.AssetType, string> = { image: "png", video: "mp4", audio: "wav", text: "txt" }

export const AssetView = (props: { readonly asset: Task.Asset; readonly label: string }) => {
  const { asset, label } = props
  const { src, error } = useSource(asset.url)
  const download =
    src === undefined ? null : (
      <a class="download" href={src} download={`${asset.id}.${extensionOf[asset.type]}`}>
        Download {label}
      </a>
    )
  return (
    <figure class={`asset asset-${asset.type}`}>
      <figcaption>{label}</figcaption>
      <ErrorNotice error={error} />
      {asset.type === "image" && src !== undefined ? <img src={src} alt={label} /> : null}
      {/* biome-ignore lint/a11y/useMediaCaption: generated media has no caption track */}
      {asset.type === "video" && src !== undefined ? <video src={src} controls preload="metadata" aria-label={label} /> : null}
      {/* biome-ignore lint/a11y/useMediaCaption: generated audio has no caption track */}
      {asset.type === "audio" && src !== undefined ? <audio src={src} controls preload="metadata" aria-label={label} /> : null}
      {asset.type === "text" && asset.text !== undefined ? <pre class="lyrics">{asset.text}</pre> : null}
      {asset.type === "text" && asset.text !== undefined && asset.url === undefined ? null : download}
    </figure>
  )
}

/** Every asset of a task, labelled "Song 1", "Image 2", "Lyrics"... */
export const Assets = (props: { readonly assets: ReadonlyArray<Task.Asset> }) => {
  const counts = new Map<string, number>()
  const names: Record<Task.AssetType, string> = { image: "Image", video: "Video", audio: "Song", text: "Lyrics" }
  const total = (type: string) => props.assets.filter((asset) => asset.type === type).length
  return (
    <div class="assets">
      {props.assets.map((asset) => {
        const n = (counts.get(asset.type) ?? 0) + 1
        counts.set(asset.type, n)
        const label = total(asset.type) > 1 ? `${names[asset.type]} ${n}` : names[asset.type]
        return <AssetView key={asset.id} asset={asset} label={label} />
      })}
    </div>
  )
}
