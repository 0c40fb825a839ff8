import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

interface LockedPackage {
  readonly version?: string;
  readonly engines?: { readonly node?: string } | readonly string[];
}

function readJson<T>(file: string): T {
  return JSON.parse(readFileSync(join(root, file), 'utf8')) as T;
}

/** Each locked package whose `engines.node` does not accept every Node version `claimed` takes in. */
function packagesRefusing(claimed: string, packages: Record<string, LockedPackage>): string[] {
  const refusing: string[] = [];
  for (const [where, locked] of Object.entries(packages)) {
    // Old packages give `engines` as an array of strings, which npm ignores.
    const wanted = Array.isArray(locked.engines) ? undefined : (locked.engines as { node?: string } | undefined)?.node;
    if (where === '' || wanted === undefined) continue;
    if (!semver.subset(claimed, wanted)) refusing.push(`${where}@${locked.version}: node ${wanted}`);
  }
  return refusing;
}

describe('the Node versions package.json claims', () => {
  const claimed = readJson<{ engines: { node: string } }>('package.json').engines.node;

  it('are accepted by every package in package-lock.json (npm warns EBADENGINE otherwise)', () => {
    const lock = readJson<{ packages: Record<string, LockedPackage> }>('package-lock.json');
    expect(packagesRefusing(claimed, lock.packages)).toEqual([]);
  });

  it('include the Node running this suite', () => {
    expect(semver.satisfies(process.version, claimed), `${process.version} against ${claimed}`).toBe(true);
  });
});
