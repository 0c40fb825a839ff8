/** HTML text that is safe to insert as is: made only by {@link html} (or {@link rawHtml} for trusted constants). */
export class Html {
  constructor(readonly text: string) {}
}

/** A value {@link html} may insert: text is escaped, nested {@link Html} kept, lists joined, null and undefined left out. */
export type HtmlValue = string | number | bigint | boolean | null | undefined | Html | readonly HtmlValue[];

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/**
 * Escapes text for HTML content and quoted attribute values.
 *
 * @example
 * ```ts
 * escapeHtml('<script>"x"</script>'); // '&lt;script&gt;&quot;x&quot;&lt;/script&gt;'
 * ```
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => ESCAPES[character]!);
}

/**
 * A template of HTML in which every inserted value is escaped (event JSON is written by whoever
 * wrote the log): only {@link Html} values are inserted as they are.
 *
 * @example
 * ```ts
 * html`<td>${event.kind}</td>`; // an event kind of '<script>' shows as text
 * html`<ul>${ids.map((id) => html`<li>${id}</li>`)}</ul>`;
 * ```
 */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let text = strings[0]!;
  for (const [i, value] of values.entries()) text += insert(value) + strings[i + 1]!;
  return new Html(text);
}

/** Trusted HTML (a constant of the console's own), inserted without escaping. */
export function rawHtml(text: string): Html {
  return new Html(text);
}

function insert(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return (value as readonly HtmlValue[]).map(insert).join('');
  return escapeHtml(String(value));
}
