/** Table parts: a run of header cells for columns of numbers (right-aligned by the `number` class). */

export const NumberHeads = (props: { readonly labels: ReadonlyArray<string> }) => (
  <>
    {props.labels.map((label) => (
      <th key={label} scope="col" class="number">
        {label}
      </th>
    ))}
  </>
)
