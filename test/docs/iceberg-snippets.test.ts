// docs/iceberg.md's engine snippets hold together (issue 37, item 16): the Trino block queries only
// tables it registered (it registered `products` and queried the never-registered
// `products_changes`), each registered at the folder of the table its name says; the Spark text
// says what open-source Spark needs for the `s3://` paths (S3A); the page states the storage cost of
// rewriting `current/` every run.
import { describe, expect, it } from 'vitest';
import { docFiles, fencedBlocks } from './doc-blocks.js';

const page = docFiles().find((d) => d.file === 'docs/iceberg.md')!;
const blocks = fencedBlocks(page).filter((b) => b.lang === 'icebergsql');
const engine = (name: string) => blocks.find((b) => b.body.startsWith(`-- ${name}`))!;

describe('docs/iceberg.md engine snippets', () => {
  it('Trino: every table a query names was registered, at its own folder', () => {
    const trino = engine('Trino').body;
    const registered = new Map(
      [...trino.matchAll(/table_name => '(\w+)', table_location => '([^']+)'/g)].map((m) => [m[1]!, m[2]!]),
    );
    expect([...registered.keys()].sort()).toEqual(['products', 'products_changes']);
    expect(registered.get('products')).toMatch(/\/current$/);
    expect(registered.get('products_changes')).toMatch(/\/changes$/);
    const queried = [...trino.matchAll(/\blake\.catalog\.(\w+)/g)].map((m) => m[1]!);
    expect(queried.length).toBeGreaterThan(0);
    for (const table of queried) expect(registered.has(table), `${table} is queried but never registered`).toBe(true);
  });

  it('Spark: open-source Spark is told to use s3a (or S3FileIO) for the s3:// paths', () => {
    expect(page.text).toMatch(/Open-source Spark has no `s3:\/\/` file system/);
    expect(page.text).toContain('`s3a://my-lake`');
    expect(page.text).toContain('spark.hadoop.fs.s3.impl=org.apache.hadoop.fs.s3a.S3AFileSystem');
    expect(page.text).toContain('org.apache.iceberg.aws.s3.S3FileIO');
  });

  it('states what a run writes into current/ and what the kept snapshots store', () => {
    const cost = /\*\*Costs\.\*\* An incremental run writes the rows it changed[\s\S]*?\n\n/.exec(page.text)?.[0];
    expect(cost).toBeDefined();
    // The measured share of a full rewrite an incremental run writes, against issue 41's target.
    expect(cost).toMatch(
      /\*\*\d+(\.\d+)?\s%\sof\sa\sfull\srewrite\*\*\sper\sincremental\srun\s\(the\starget\swas\s5\s%\)/,
    );
    expect(page.text).toContain('**Engines that read position deletes**');
    expect(page.text).toMatch(/more\sthan\s20\s%\sof\sits\srows\sare\sdeleted/);
    const storage = /\*\*Storage\.\*\* [\s\S]*?\n\n/.exec(page.text)?.[0];
    expect(storage).toContain('a file kept\nfrom run to run is stored once');
    expect(storage).toContain('its live delete files');
    expect(storage).toContain('`keepSnapshotsDays`');
  });
});
