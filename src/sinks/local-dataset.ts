// The files of a local dataset: every path its template renders, for any partition value, part
// number (and run id). Two chores of the publication protocol work on them:
// - before the first record, the temp files that killed runs of this dataset left behind
//   (`.<name>.<host>-<pid>-<random>.tmp`) are removed: only those of a process of this host
//   that no longer exists, or untouched for a day; never a live run's;
// - after a run published, the files of earlier runs that this run replaces (same template
//   without {run}: a same-day rerun of `dt={date}/part-{part}.parquet`) are removed, so a
//   glob over the dataset counts each record once.
import { readdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { HOST_TAG, parseTempName } from '../storage/local-file.js';
import type { PathTemplate } from './path-template.js';

const ABANDONED_MS = 24 * 60 * 60 * 1000;

/** Every existing file that `template` could have rendered (resolved against baseDir): path and rendered form. */
async function datasetFiles(
  template: PathTemplate,
  baseDir: string,
  includeHidden: boolean,
): Promise<Array<{ file: string; rendered: string; name: string }>> {
  const prefix = template.fixedPrefix();
  const sample = template.render(
    template.fields.map(() => 'x'),
    0,
  );
  const depth = sample.slice(prefix.length).split('/').length;
  const root = path.resolve(baseDir, prefix);
  const found: Array<{ file: string; rendered: string; name: string }> = [];
  const walk = async (dir: string, relative: string, level: number): Promise<void> => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (entry.isDirectory()) {
        if (level < depth) await walk(path.join(dir, entry.name), `${relative}${entry.name}/`, level + 1);
      } else if (entry.isFile() && level === depth && (includeHidden || !entry.name.startsWith('.'))) {
        found.push({
          file: path.join(dir, entry.name),
          rendered: `${prefix}${relative}${entry.name}`,
          name: entry.name,
        });
      }
    }
  };
  await walk(root, '', 1);
  return found;
}

/** Removes this dataset's temp files whose writer is gone; returns their paths. */
export async function removeStaleTemps(template: PathTemplate, baseDir: string): Promise<string[]> {
  const removed: string[] = [];
  for (const { file, rendered, name } of await datasetFiles(template, baseDir, true)) {
    const temp = parseTempName(name);
    if (!temp) continue;
    const finalRendered = `${rendered.slice(0, rendered.length - name.length)}${temp.finalName}`;
    if (!template.pattern.test(finalRendered)) continue;
    if (
      (await isStaleTemp(file)) &&
      (await unlink(file).then(
        () => true,
        () => false,
      ))
    )
      removed.push(file);
  }
  return removed;
}

/** Whether `file` is a temp file (storage/local-file.ts tempPathFor) whose writer is gone: a process of this host that has ended, or untouched for a day. */
export async function isStaleTemp(file: string): Promise<boolean> {
  const temp = parseTempName(path.basename(file));
  if (!temp) return false;
  if (temp.hostTag === HOST_TAG && !processExists(temp.pid)) return true;
  const info = await stat(file).catch(() => undefined);
  return !!info && Date.now() - info.mtimeMs > ABANDONED_MS;
}

/** Removes the dataset's files that this run did not write (`written`: absolute paths); returns them. */
export async function removeSuperseded(
  template: PathTemplate,
  baseDir: string,
  written: ReadonlySet<string>,
): Promise<string[]> {
  const removed: string[] = [];
  for (const { file, rendered } of await datasetFiles(template, baseDir, false)) {
    if (written.has(file) || !template.pattern.test(rendered)) continue;
    await unlink(file);
    removed.push(file);
  }
  return removed;
}

function processExists(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
