/**
 * A bar chart as inline SVG, described for assistive technology by a title and by the same
 * figures in a table that can be opened under it.
 */
import { money } from "../format.ts"

export interface Bar {
  readonly label: string
  readonly micros: number
}

const WIDTH = 640
const ROW = 28

export const BarChart = (props: { readonly title: string; readonly bars: ReadonlyArray<Bar>; readonly id: string }) => {
  if (props.bars.length === 0) return <p>No spend yet.</p>
  const max = Math.max(...props.bars.map((bar) => bar.micros), 1)
  const height = props.bars.length * ROW
  const summary = props.bars.map((bar) => `${bar.label}: ${money(bar.micros)}`).join("; ")
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${WIDTH} ${height}`} role="img" aria-labelledby={`${props.id}-title`} preserveAspectRatio="none">
        <title id={`${props.id}-title`}>{`${props.title}. ${summary}`}</title>
        {props.bars.map((bar, i) => {
          const width = Math.max(2, (bar.micros / max) * (WIDTH * 0.55))
          return (
            <g key={bar.label} transform={`translate(0 ${i * ROW})`}>
              <text x="8" y="18" class="chart-label">
                {bar.label.length > 28 ? `${bar.label.slice(0, 27)}…` : bar.label}
              </text>
              <rect x={WIDTH * 0.3} y="5" width={width} height="18" rx="3" class="chart-bar" />
              <text x={WIDTH * 0.3 + width + 6} y="18" class="chart-value">
                {money(bar.micros)}
              </text>
            </g>
          )
        })}
      </svg>
      <details>
        <summary>{props.title} as a table</summary>
        <table>
          <thead>
            <tr>
              <th scope="col">Item</th>
              <th scope="col">Spend</th>
            </tr>
          </thead>
          <tbody>
            {props.bars.map((bar) => (
              <tr key={bar.label}>
                <td>{bar.label}</td>
                <td class="number">{money(bar.micros)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  )
}
