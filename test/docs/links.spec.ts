import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../support/cli-process.js';
import { brokenLinks, githubSlug, headingAnchors, relativeLinks } from './markdown-links.js';

const docsDir = path.join(repoRoot, 'docs');
const markdownFiles = [
  path.join(repoRoot, 'README.md'),
  path.join(repoRoot, 'CONTRIBUTING.md'),
  ...readdirSync(docsDir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.md'))
    .map((name) => path.join(docsDir, name)),
];
const scratch = mkdtempSync(path.join(tmpdir(), 'os-audit-links-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('the documentation', () => {
  it('keeps README.md to at most 200 lines', () => {
    const lines = readFileSync(path.join(repoRoot, 'README.md'), 'utf8').trimEnd().split('\n');
    expect(lines.length).toBeLessThanOrEqual(200);
  });

  it.each(markdownFiles.map((file) => [path.relative(repoRoot, file), file]))('%s: every relative link reaches a file, and every #anchor a heading of it', (_name, file) => {
    expect(brokenLinks(file)).toEqual([]);
  });

  it('links every page of docs/ (its design notes aside) from the README', () => {
    const linked = new Set(relativeLinks(readFileSync(path.join(repoRoot, 'README.md'), 'utf8')).map((target) => target.split('#')[0]));
    const pages = readdirSync(docsDir).filter((name) => name.endsWith('.md'));
    expect(pages.filter((name) => !linked.has(`docs/${name}`))).toEqual([]);
  });
});

describe('the link check', () => {
  it("makes GitHub's anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered", () => {
    expect(githubSlug('The v0.2.60 snapshot')).toBe('the-v0260-snapshot');
    expect(githubSlug('Docker Compose: the daemon, Prometheus and a Grafana dashboard')).toBe('docker-compose-the-daemon-prometheus-and-a-grafana-dashboard');
    expect([...headingAnchors('# Top\n## In the database: `os-audit verify`\n```sh\n# not a heading\n```\n## Notes\n### Notes\n')]).toEqual([
      'top',
      'in-the-database-os-audit-verify',
      'notes',
      'notes-1',
    ]);
  });

  it('finds a missing file and a missing anchor, and passes links in code and web addresses', () => {
    const page = path.join(scratch, 'page.md');
    writeFileSync(path.join(scratch, 'other.md'), '# Other\n\n## A section\n');
    writeFileSync(
      page,
      [
        '# Page',
        '[fine](other.md#a-section) [self](#page) [web](https://example.org/x.md)',
        '[gone](missing.md) [no anchor](other.md#no-such-section) [not here](#elsewhere)',
        '`[code](nowhere.md)`',
        '```md',
        '[fenced](nowhere.md)',
        '```',
      ].join('\n'),
    );
    expect(brokenLinks(page)).toEqual([
      expect.stringMatching(/^missing\.md: no file /),
      'other.md#no-such-section: no heading of other.md has the anchor #no-such-section',
      '#elsewhere: no heading of page.md has the anchor #elsewhere',
    ]);
  });
});
