import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './deploy-files.js';

/** One instruction of a Dockerfile, continuation lines joined. */
export interface DockerInstruction {
  keyword: string;
  args: string;
}

export interface DockerStage {
  /** The base image. */
  image: string;
  /** The `AS` name, if any. */
  name?: string;
  instructions: DockerInstruction[];
}

/** A COPY: its sources (in the context, or in stage `from`) and its destination. */
export interface DockerCopy {
  from?: string;
  sources: string[];
  destination: string;
}

export function readDockerfile(relativePath = 'Dockerfile'): DockerStage[] {
  return parseDockerfile(readFileSync(path.join(REPO_ROOT, relativePath), 'utf8'));
}

/**
 * The stages of a Dockerfile, each with its instructions (comments, blank lines and parser
 * directives left out).
 *
 * @example
 * ```ts
 * const [build, runtime] = parseDockerfile('FROM node:20 AS build\nRUN npm ci\nFROM node:20\nCMD ["x"]\n');
 * // build: { image: 'node:20', name: 'build', instructions: [{ keyword: 'RUN', args: 'npm ci' }] }
 * ```
 */
export function parseDockerfile(text: string): DockerStage[] {
  const stages: DockerStage[] = [];
  let pending = '';
  for (const line of text.split('\n')) {
    if (pending === '' && /^\s*(#|$)/.test(line)) continue;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    const instruction = (pending + line).trim();
    pending = '';
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/.exec(instruction) ?? [];
    if (keyword.toUpperCase() === 'FROM') {
      const [image = '', as, name] = args.split(/\s+/);
      stages.push({ image, ...(as?.toUpperCase() === 'AS' && name ? { name } : {}), instructions: [] });
    } else {
      const stage = stages.at(-1);
      if (!stage) throw new Error(`an instruction before FROM: ${instruction}`);
      stage.instructions.push({ keyword: keyword.toUpperCase(), args });
    }
  }
  return stages;
}

/** The instructions of a stage with this keyword. */
export function instructionsOf(stage: DockerStage, keyword: string): DockerInstruction[] {
  return stage.instructions.filter((instruction) => instruction.keyword === keyword);
}

/** The JSON (exec) form of ENTRYPOINT, CMD or RUN; the shell form is an error. */
export function execForm(instruction: DockerInstruction): string[] {
  const parsed: unknown = JSON.parse(instruction.args);
  if (!Array.isArray(parsed) || !parsed.every((part) => typeof part === 'string')) throw new Error(`${instruction.keyword} is not in exec form`);
  return parsed;
}

export function parseCopy(instruction: DockerInstruction): DockerCopy {
  const words = instruction.args.startsWith('[') ? execForm(instruction) : instruction.args.split(/\s+/);
  const flags = words.filter((word) => word.startsWith('--'));
  const paths = words.filter((word) => !word.startsWith('--'));
  const from = flags.find((flag) => flag.startsWith('--from='))?.slice('--from='.length);
  const destination = paths.pop();
  if (!destination || paths.length === 0) throw new Error(`COPY needs sources and a destination: ${instruction.args}`);
  return { ...(from ? { from } : {}), sources: paths, destination };
}

/** The WORKDIR of a stage (the image's default `/` when it sets none). */
export function workdirOf(stage: DockerStage): string {
  return instructionsOf(stage, 'WORKDIR').at(-1)?.args ?? '/';
}

/** The patterns of `.dockerignore`, in order. */
export function readDockerignore(): string[] {
  return readFileSync(path.join(REPO_ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/**
 * Whether `.dockerignore` keeps a path of the context out of the build, as Docker decides: the
 * last pattern that matches the path or one of its parent folders wins, and a `!` pattern
 * takes the path back in.
 */
export function isIgnored(patterns: readonly string[], contextPath: string): boolean {
  const parts = path.posix.normalize(contextPath).replace(/^\.\/|\/$/g, '').split('/');
  const candidates = parts.map((_, index) => parts.slice(0, index + 1).join('/'));
  let ignored = false;
  for (const pattern of patterns) {
    const negated = pattern.startsWith('!');
    const glob = globToRegExp(path.posix.normalize(negated ? pattern.slice(1) : pattern).replace(/^\//, ''));
    if (candidates.some((candidate) => glob.test(candidate))) ignored = !negated;
  }
  return ignored;
}

function globToRegExp(glob: string): RegExp {
  let source = '';
  for (let index = 0; index < glob.length; index += 1) {
    const char = glob[index]!;
    if (char === '*' && glob[index + 1] === '*') {
      source += '.*';
      index += 1;
    } else if (char === '*') {
      source += '[^/]*';
    } else if (char === '?') {
      source += '[^/]';
    } else {
      source += char.replace(/[.+^${}()|[\]\\]/g, '\\$&');
    }
  }
  return new RegExp(`^${source}$`);
}
