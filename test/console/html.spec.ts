import { describe, expect, it } from 'vitest';
import { escapeHtml, html, rawHtml } from '../../src/console/html.js';

describe('html templates', () => {
  it('escapes every inserted text, in content and in quoted attributes', () => {
    const hostile = `</td><script>alert("x")</script><a href='javascript:y'>&amp;`;
    expect(html`<td title="${hostile}">${hostile}</td>`.text).toBe(
      '<td title="&lt;/td&gt;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;a href=&#39;javascript:y&#39;&gt;&amp;amp;">' +
        '&lt;/td&gt;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;a href=&#39;javascript:y&#39;&gt;&amp;amp;</td>',
    );
    expect(escapeHtml('a&b')).toBe('a&amp;b');
  });

  it('keeps nested templates and trusted HTML, joins lists, and leaves out null, undefined and false', () => {
    const items = ['<1>', '2'].map((item) => html`<li>${item}</li>`);
    expect(html`<ul>${items}</ul>${null}${undefined}${false}${0}${rawHtml('<br>')}`.text).toBe('<ul><li>&lt;1&gt;</li><li>2</li></ul>0<br>');
  });
});
