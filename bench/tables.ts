/** Rows of cells as aligned text, for the terminal: the first is the header, underlined. */
export function alignedTable(headers: readonly string[], lines: readonly (readonly string[])[]): string {
  const all = [headers, ...lines];
  const widths = headers.map((_, i) => Math.max(...all.map((line) => [...line[i]!].length)));
  const line = (values: readonly string[]) => values.map((v, i) => v + ' '.repeat(widths[i]! - [...v].length)).join('  ');
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(line)].join('\n');
}

/** Rows of cells as a Markdown table. */
export function markdownTable(headers: readonly string[], lines: readonly (readonly string[])[]): string {
  const escape = (v: string) => v.replaceAll('|', '\\|');
  return [
    `| ${headers.join(' | ')} |`,
    `|${headers.map(() => '---').join('|')}|`,
    ...lines.map((values) => `| ${values.map(escape).join(' | ')} |`),
  ].join('\n');
}
