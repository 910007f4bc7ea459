// Checks, before the first API request (and in --dry-run), that a run can write where it will
// have to: every local output path (sinks and dead-letter sinks) and the local state file. An
// extract of an hour must not end in "cannot rename ... is a directory". Nothing is created:
// the nearest existing folder of each destination must be a writable folder, and a fixed
// output path or the state path must not be a folder.
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import path from 'node:path';
import { CatalogStreamsError } from '../errors.js';
import { PathTemplate } from '../sinks/shared/path-template.js';
import { missingS3Sdk, s3SdkInstalled, type S3Feature } from '../storage/s3-sdk.js';
import type { PlannedStage } from '../core/planned-stage.js';
import type { LoadedPipeline } from './loader.js';
import type { PipelinePlan } from './plan.js';

/** Every sink of a plan with its place: the sinks, and the sinks other stages name (dead letters). */
function plannedSinks(plan: PipelinePlan): PlannedStage<'sink'>[] {
  return [...plan.nestedSinks.map((n) => n.stage), ...plan.sinks];
}

async function statOrUndefined(p: string) {
  try {
    return await stat(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** The nearest existing ancestor of `dir` must be a folder this process may write into; returns a problem or undefined. */
async function folderProblem(dir: string): Promise<string | undefined> {
  let current = dir;
  for (;;) {
    let info;
    try {
      info = await statOrUndefined(current);
    } catch (err) {
      return `${current} cannot be read (${(err as NodeJS.ErrnoException).code})`;
    }
    if (info) {
      if (!info.isDirectory()) return `${current} is a file, not a folder`;
      try {
        await access(current, constants.W_OK | constants.X_OK);
        return undefined;
      } catch {
        return `the folder ${current} is not writable`;
      }
    }
    const parent = path.dirname(current);
    if (parent === current) return undefined;
    current = parent;
  }
}

/**
 * Fails with `preflight.output` / `preflight.state` naming the option, the path and the fix. The
 * local-file sinks are those whose stage writes under a `path` template (`replacesAt: 'path'`:
 * one per format), so a new format is checked without a list of its own.
 */
export async function checkDestinations(loaded: Pick<LoadedPipeline, 'file' | 'plan'>): Promise<void> {
  const { file, plan } = loaded;
  const { baseDir } = plan;
  const statePath = plan.state?.path;
  const run = { name: plan.name, id: 'preflight', startedAt: new Date() };
  // The AWS SDK is an optional peer dependency: its absence is found here, not after pages were read.
  const s3Uses: Array<{ feature: S3Feature; where: string }> = [];
  for (const { type, options, at } of plannedSinks(plan)) {
    const location = options.path;
    if (type === 's3') s3Uses.push({ feature: 's3-sink', where: `${file}: ${at}` });
    else if (type === 'table' && typeof location === 'string' && location.startsWith('s3://'))
      s3Uses.push({ feature: 's3-table', where: `${file}: ${at}.path "${location}"` });
  }
  if (statePath && /^s3:/.test(statePath))
    s3Uses.push({ feature: 's3-state', where: `${file}: state.path "${statePath}"` });
  if (s3Uses.length > 0 && !s3SdkInstalled()) throw missingS3Sdk(s3Uses[0]!.feature, s3Uses[0]!.where);
  for (const { definition, options, at } of plannedSinks(plan)) {
    const location = options.path;
    if (definition.replacesAt !== 'path' || typeof location !== 'string' || location === '-') continue;
    let template: PathTemplate;
    try {
      template = PathTemplate.parse(location, run, 'path');
    } catch {
      continue; // the stage itself reports a bad template, with its own message
    }
    const target = path.resolve(baseDir, template.isDynamic ? template.fixedPrefix() || '.' : template.render([], 0));
    if (!template.isDynamic && (await statOrUndefined(target).catch(() => undefined))?.isDirectory()) {
      throw new CatalogStreamsError(
        'preflight.output',
        `${file}: ${at}.path "${location}": ${target} is a folder, so the output file cannot be written there; remove the folder or choose another path (checked before the first request)`,
      );
    }
    const problem = await folderProblem(template.isDynamic ? target : path.dirname(target));
    if (problem) {
      throw new CatalogStreamsError(
        'preflight.output',
        `${file}: ${at}.path "${location}": ${problem}; fix the folder or choose another path (checked before the first request)`,
      );
    }
  }
  if (statePath && !/^s3:/.test(statePath)) {
    const target = path.resolve(baseDir, statePath);
    const info = await statOrUndefined(target).catch(() => undefined);
    const problem = info?.isDirectory()
      ? `${target} is a folder`
      : info
        ? await access(target, constants.W_OK).then(
            () => folderProblem(path.dirname(target)),
            () => `${target} is not writable`,
          )
        : await folderProblem(path.dirname(target));
    if (problem) {
      throw new CatalogStreamsError(
        'preflight.state',
        `${file}: state.path "${statePath}": ${problem}, so the cursor could not be saved after the run; fix it or choose another state.path (checked before the first request)`,
      );
    }
  }
}
