import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens. */
export function githubSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-');
}

/** The text outside fenced code blocks and inline code spans, where links and headings count. */
function prose(markdown: string): string[] {
  let fenced = false;
  const lines: string[] = [];
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    else if (!fenced) lines.push(line.replace(/`[^`]*`/g, ''));
  }
  return lines;
}

/** Every anchor of a Markdown file's headings; a repeated heading gets -1, -2, … as on GitHub. */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6} +(.*?)#*\s*$/.exec(line);
    if (!heading) continue;
    // Inline code keeps its text in the anchor: only the backticks go.
    const slug = githubSlug(heading[1]!.replace(/`/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1'));
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** The relative link targets of a Markdown text (web addresses left out), as written. */
export function relativeLinks(markdown: string): string[] {
  const targets: string[] = [];
  for (const line of prose(markdown)) {
    for (const [, target] of line.matchAll(/\]\(([^)\s]+)(?: "[^"]*")?\)/g)) {
      if (!/^[a-z][a-z0-9+.-]*:/i.test(target!)) targets.push(target!);
    }
  }
  return targets;
}

/** What is wrong with each relative link of `file`: a missing file, or an anchor no heading of its file has. */
export function brokenLinks(file: string): string[] {
  const problems: string[] = [];
  for (const target of relativeLinks(readFileSync(file, 'utf8'))) {
    const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
    const linked = pathPart === '' ? file : path.resolve(path.dirname(file), decodeURIComponent(pathPart));
    if (!existsSync(linked)) {
      problems.push(`${target}: no file ${path.relative(process.cwd(), linked)}`);
      continue;
    }
    if (anchor === undefined) continue;
    if (statSync(linked).isDirectory() || !linked.endsWith('.md')) {
      problems.push(`${target}: an anchor into a file that is not Markdown`);
      continue;
    }
    if (!headingAnchors(readFileSync(linked, 'utf8')).has(anchor)) problems.push(`${target}: no heading of ${path.basename(linked)} has the anchor #${anchor}`);
  }
  return problems;
}
