import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// Comments say why in short sentences: none of 40 words or more; longer reasoning goes to docs/design/.
const LONGEST_SENTENCE = 39;
const FOLDERS = ['src', 'projections', 'migrations', 'bench', 'scripts', 'test/support'];

const root = join(import.meta.dirname, '..', '..');

interface Comment {
  readonly line: number;
  readonly text: string;
}

interface LongSentence {
  readonly line: number;
  readonly words: number;
}

/** The comments of a TypeScript source, each with the line it starts on; a run of `//` lines is one comment. */
function commentsOf(source: string): Comment[] {
  const comments: Comment[] = [];
  let line = 1;
  let i = 0;
  let previousLineComment = -1;
  // Whether a `/` here starts a regular expression rather than a division.
  let regexAllowed = true;
  const templateDepths: number[] = [];
  let braceDepth = 0;
  const advanceTo = (end: number): void => {
    for (let k = i; k < end; k++) if (source[k] === '\n') line++;
    i = end;
  };
  const skipQuoted = (quote: string): void => {
    let k = i + 1;
    while (k < source.length && source[k] !== quote && source[k] !== '\n') k += source[k] === '\\' ? 2 : 1;
    advanceTo(k + 1);
  };
  // From just after a backtick or a `}` closing a substitution, to the next backtick or `${`.
  const skipTemplate = (): void => {
    let k = i;
    while (k < source.length && source[k] !== '`' && !(source[k] === '$' && source[k + 1] === '{')) k += source[k] === '\\' ? 2 : 1;
    if (source[k] === '$') {
      templateDepths.push(braceDepth);
      braceDepth++;
      advanceTo(k + 2);
      regexAllowed = true;
    } else {
      advanceTo(k + 1);
      regexAllowed = false;
    }
  };
  while (i < source.length) {
    const c = source[i]!;
    const next = source[i + 1];
    if (c === '/' && next === '/') {
      const end = source.indexOf('\n', i) === -1 ? source.length : source.indexOf('\n', i);
      const text = source.slice(i + 2, end);
      const alone = /^[ \t]*$/.test(source.slice(source.lastIndexOf('\n', i - 1) + 1, i));
      const last = comments.at(-1);
      if (alone && last && previousLineComment === line - 1) comments[comments.length - 1] = { line: last.line, text: `${last.text}\n${text}` };
      else comments.push({ line, text });
      previousLineComment = alone ? line : -1;
      advanceTo(end);
    } else if (c === '/' && next === '*') {
      const close = source.indexOf('*/', i + 2);
      const end = close === -1 ? source.length : close + 2;
      comments.push({ line, text: source.slice(i + 2, end - 2).replace(/^\*/, '') });
      advanceTo(end);
    } else if (c === '"' || c === "'") {
      skipQuoted(c);
      regexAllowed = false;
    } else if (c === '`') {
      i++;
      skipTemplate();
    } else if (c === '/' && regexAllowed) {
      let k = i + 1;
      let inClass = false;
      while (k < source.length && source[k] !== '\n' && (inClass || source[k] !== '/')) {
        if (source[k] === '[') inClass = true;
        else if (source[k] === ']') inClass = false;
        k += source[k] === '\\' ? 2 : 1;
      }
      advanceTo(k + 1);
      regexAllowed = false;
    } else if (c === '{') {
      braceDepth++;
      regexAllowed = true;
      i++;
    } else if (c === '}') {
      braceDepth--;
      i++;
      if (templateDepths.at(-1) === braceDepth) {
        templateDepths.pop();
        skipTemplate();
      } else regexAllowed = true;
    } else if (/[\w$]/.test(c)) {
      const word = /^[\w$]+/.exec(source.slice(i, i + 64))![0];
      regexAllowed = /^(return|typeof|case|do|else|in|of|new|delete|void|throw|yield|await|instanceof)$/.test(word);
      i += word.length;
    } else {
      if (c === '\n') line++;
      else if (!/\s/.test(c)) regexAllowed = !/[)\]]/.test(c);
      i++;
    }
  }
  return comments;
}

/** The sentences of 40 words or more in one comment, leaving out code fences, `@example` bodies and URLs. */
function longSentences(comment: Comment): LongSentence[] {
  const found: LongSentence[] = [];
  let words = 0;
  let start = comment.line;
  const endSentence = (): void => {
    if (words > LONGEST_SENTENCE) found.push({ line: start, words });
    words = 0;
  };
  let inExample = false;
  let inFence = false;
  comment.text.split('\n').forEach((raw, offset) => {
    const text = raw.replace(/^\s*\*(?!\/)/, '').trim();
    if (text.startsWith('```')) {
      endSentence();
      inFence = !inFence;
      return;
    }
    if (/^@\w+/.test(text)) {
      endSentence();
      inExample = text.startsWith('@example');
    }
    // A blank line ends a paragraph; a list item starts a sentence.
    if (text === '' || /^([-*]|\d+\.)\s/.test(text)) endSentence();
    if (inExample || inFence) return;
    for (const word of text.replace(/\b\w+:\/\/\S+/g, '').split(/\s+/)) {
      if (!/[\p{L}\p{N}]/u.test(word)) continue;
      if (words === 0) start = comment.line + offset;
      words++;
      if (/[.?!]["'`)\]]*$/.test(word) && !/^(e\.g|i\.e|vs|cf)\.$/i.test(word)) endSentence();
    }
  });
  endSentence();
  return found;
}

function typeScriptFiles(folder: string): string[] {
  return readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => relative(root, join(root, folder, name)))
    .sort();
}

describe('comments', () => {
  it('finds `//` runs and doc blocks, not comment-like text in strings, templates or regular expressions', () => {
    const source = [
      "const a = '// no'; // one",
      'const b = `/* no ${"//no"} */`; /* two */',
      'const c = /\\/\\/ no/.test(a) ? 1 / 2 : 3; // three',
      '  // four,',
      '  // still four',
      '/** five',
      ' * @example',
      ' */',
    ].join('\n');
    expect(commentsOf(source)).toEqual([
      { line: 1, text: ' one' },
      { line: 2, text: ' two ' },
      { line: 3, text: ' three' },
      { line: 4, text: ' four,\n still four' },
      { line: 6, text: ' five\n * @example\n ' },
    ]);
  });

  it('counts a sentence across lines, and not fences, examples or URLs', () => {
    const forty = Array.from({ length: 40 }, (_, k) => `w${k}`);
    const long = { line: 10, text: ` Short one.\n ${forty.slice(0, 20).join(' ')}\n ${forty.slice(20).join(' ')}.` };
    expect(longSentences(long)).toEqual([{ line: 11, words: 40 }]);
    const excluded = ['```', ...forty, '```', 'See https://example.org/a b c.', '@example', ...forty].join('\n * ');
    expect(longSentences({ line: 1, text: excluded })).toEqual([]);
  });

  it(`has no sentence of ${LONGEST_SENTENCE + 1} words or more in ${FOLDERS.join(', ')}`, () => {
    const long = FOLDERS.flatMap(typeScriptFiles).flatMap((file) =>
      commentsOf(readFileSync(join(root, file), 'utf8')).flatMap((comment) =>
        longSentences(comment).map(({ line, words }) => `${file}:${line}: ${words} words`),
      ),
    );
    expect(long).toEqual([]);
  });
});
