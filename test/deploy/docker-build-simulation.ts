import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from './deploy-files.js';
import { type DockerCopy, type DockerStage, isIgnored, parseCopy, readDockerignore, workdirOf } from './dockerfile.js';

const run = promisify(execFile);

/** A stage built on the host: `root` stands for the stage's WORKDIR. */
export interface SimulatedStage {
  stage: DockerStage;
  root: string;
  workdir: string;
  /** The stage's ENV. */
  env: Record<string, string>;
}

interface LockEntry {
  dev?: boolean;
  optional?: boolean;
  devOptional?: boolean;
}

/**
 * Builds the stages of a Dockerfile without Docker, each into a folder of `into`: COPY copies
 * from the context (refusing what `.dockerignore` leaves out) or from an earlier stage's
 * folder, RUN runs on the host, except `npm ci`, which links the packages the lock file names
 * (only those its `--omit` flags keep) from this checkout's node_modules, since nothing may be
 * downloaded here. What a stage's files cannot do (a build without an input, a CLI without a
 * dependency) then fails as it would in the image; what the base image itself gives (its
 * Node.js, its user) is not simulated.
 *
 * @example
 * ```ts
 * const stages = await simulateDockerBuild(readDockerfile(), mkdtempSync('/tmp/image-'));
 * const runtime = stages.at(-1)!; // runtime.root holds what the image's WORKDIR holds
 * ```
 */
export async function simulateDockerBuild(stages: readonly DockerStage[], into: string): Promise<SimulatedStage[]> {
  const ignorePatterns = readDockerignore();
  const built: SimulatedStage[] = [];
  for (const [index, stage] of stages.entries()) {
    const simulated: SimulatedStage = { stage, root: path.join(into, stage.name ?? `stage-${index}`), workdir: workdirOf(stage), env: {} };
    mkdirSync(simulated.root, { recursive: true });
    for (const instruction of stage.instructions) {
      switch (instruction.keyword) {
        case 'COPY':
          copyInto(simulated, parseCopy(instruction), built, ignorePatterns);
          break;
        case 'RUN':
          for (const command of instruction.args.split('&&').map((part) => part.trim())) await runCommand(simulated, command);
          break;
        case 'ENV': {
          const [, name = '', value = ''] = /^(\w+)=(.*)$/.exec(instruction.args) ?? [];
          if (!name) throw new Error(`ENV in a form the simulation does not read: ${instruction.args}`);
          simulated.env[name] = value;
          break;
        }
        case 'WORKDIR':
        case 'USER':
        case 'ENTRYPOINT':
        case 'CMD':
          break;
        default:
          throw new Error(`the simulation does not know ${instruction.keyword}`);
      }
    }
    built.push(simulated);
  }
  return built;
}

function copyInto(target: SimulatedStage, copy: DockerCopy, built: readonly SimulatedStage[], ignorePatterns: readonly string[]): void {
  const destination = path.join(target.root, copy.destination);
  for (const source of copy.sources) {
    let from: string;
    if (copy.from === undefined) {
      if (isIgnored(ignorePatterns, source)) throw new Error(`COPY ${source}: .dockerignore leaves it out of the context`);
      from = path.join(REPO_ROOT, source);
    } else {
      const stage = built.find((candidate) => candidate.stage.name === copy.from);
      if (!stage) throw new Error(`COPY --from=${copy.from}: no earlier stage of that name`);
      const inStage = path.posix.relative(stage.workdir, source);
      if (inStage.startsWith('..')) throw new Error(`COPY --from=${copy.from} ${source}: outside the stage's WORKDIR ${stage.workdir}`);
      from = path.join(stage.root, inStage);
    }
    if (!existsSync(from)) throw new Error(`COPY ${source}: no such file`);
    if (statSync(from).isDirectory()) {
      cpSync(from, destination, {
        recursive: true,
        filter: (file) => copy.from !== undefined || !isIgnored(ignorePatterns, path.relative(REPO_ROOT, file)),
      });
    } else {
      const intoFolder = copy.destination.endsWith('/') || copy.destination === '.' || copy.sources.length > 1;
      cpSync(from, intoFolder ? path.join(destination, path.basename(source)) : destination);
    }
  }
}

async function runCommand(stage: SimulatedStage, command: string): Promise<void> {
  const words = command.split(/\s+/);
  if (words[0] === 'npm' && words[1] === 'ci') {
    linkDependencies(stage.root, words.filter((word) => word.startsWith('--omit=')).map((word) => word.slice('--omit='.length)));
    // npm ci runs the package's own lifecycle scripts (prepare: the build) unless told not to.
    if (!words.includes('--ignore-scripts')) await shell(stage, 'npm run prepare --if-present');
    return;
  }
  // The cache is not part of what the image runs.
  if (command === 'npm cache clean --force') return;
  await shell(stage, command);
}

async function shell(stage: SimulatedStage, command: string): Promise<void> {
  try {
    await run('sh', ['-c', command], { cwd: stage.root, env: { ...process.env, ...stage.env } });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`RUN ${command} failed:\n${stdout}${stderr}`, { cause: error });
  }
}

/** What `npm ci --omit=…` would install, as links into this checkout's node_modules. */
function linkDependencies(root: string, omit: readonly string[]): void {
  const installed = path.join(REPO_ROOT, 'node_modules');
  const target = path.join(root, 'node_modules');
  if (omit.length === 0) {
    symlinkSync(installed, target, 'dir');
    return;
  }
  const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const omitted = (entry: LockEntry) =>
    (omit.includes('dev') && entry.dev === true) ||
    (omit.includes('optional') && entry.optional === true) ||
    (omit.includes('dev') && omit.includes('optional') && entry.devOptional === true);
  for (const [key, entry] of Object.entries(lock.packages)) {
    // Top-level packages only: the nested ones come with the folder of the package that has them.
    const name = /^node_modules\/((?:@[^/]+\/)?[^/]+)$/.exec(key)?.[1];
    if (!name || omitted(entry)) continue;
    if (!existsSync(path.join(installed, name))) throw new Error(`${name} is in package-lock.json but not installed here`);
    mkdirSync(path.dirname(path.join(target, name)), { recursive: true });
    symlinkSync(path.join(installed, name), path.join(target, name), 'dir');
  }
}
