// Issue 40, region presets: `connection.region` sets the base URL, flatten-locales' default
// locales, the filters the region takes and the formats of its codes, and `--sandbox` serves the
// profile of the same name. Each of the five presets runs against its sandbox profile (small
// catalogs, in-process); what a region refuses is refused before any request (the sandbox counts
// none); a base URL works with and without /v4.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REGION_FACTS, type Region } from '../../src/catalog/regions.js';
import { LOCALES } from '../../src/sandbox/vocabulary.js';
import { cleanEnv, jsonLines, runMain, sandboxEnv, workspace } from '../cli/cli-process.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

const PRODUCTS = 300;
type Rec = Record<string, any>;

/** The filter each region's run asks with: one of its own codes, drawn from what its sandbox serves. */
const CODE_FILTER: Record<Region, (products: Rec[]) => { filter: Rec; match: (p: Rec) => boolean }> = {
  be: (ps) => {
    const codes = ps.filter((p) => p.cnk).map((p) => p.cnk as string);
    const wanted = [codes[0], codes[3]];
    return { filter: { cnk: wanted }, match: (p) => wanted.includes(p.cnk) };
  },
  fr: (ps) => {
    const code = ps.find((p) => p.cip13)!.cip13 as string;
    return {
      filter: { or: [{ cip13: code }, { status: 'inactive' }] },
      match: (p) => p.cip13 === code || p.status === 'inactive',
    };
  },
  de: (ps) => {
    const codes = ps.filter((p) => p.pzn).map((p) => p.pzn as string);
    const wanted = [codes[1], codes[2]];
    return { filter: { pzn: wanted }, match: (p) => wanted.includes(p.pzn) };
  },
  au: (ps) => {
    const code = ps.find((p) => p.pbs)!.pbs as string;
    return { filter: { pbs: [code] }, match: (p) => p.pbs === code };
  },
  us: (ps) => {
    const code = ps.find((p) => p.ean?.length)!.ean[0] as string;
    return { filter: { ean: [code] }, match: (p) => (p.ean ?? []).includes(code) };
  },
};

/** be and de: the base URL as given; fr and au: with /v4 (and a slash); us: with /v4. */
const BASE_SUFFIX: Record<Region, string> = { be: '', fr: '/v4/', de: '', au: '/v4', us: '/v4' };

function pipelineYaml(region: Region, baseUrl: string, filter: unknown, extra = ''): string {
  return [
    `name: region-${region}`,
    `connection: { region: ${region}, baseUrl: "${baseUrl}"${extra} }`,
    `source: { type: products.stream, filter: ${JSON.stringify(filter)} }`,
    'transforms:',
    '  - { type: flatten-locales, fields: [name] }',
    'sinks:',
    `  - { type: jsonl, path: out-${region}.jsonl }`,
    '',
  ].join('\n');
}

const lines = async (file: string): Promise<Rec[]> =>
  (await readFile(file, 'utf8'))
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

let ws: { dir: string; remove(): Promise<void> };
beforeAll(async () => {
  ws = await workspace('catalog-streams-regions-');
});
afterAll(() => ws?.remove());

describe.each(Object.keys(REGION_FACTS) as Region[])('region %s against its sandbox profile', (region) => {
  let sb: TestSandbox;
  let products: Rec[];
  beforeAll(async () => {
    sb = await startTestSandbox({ products: PRODUCTS, seed: 40, profile: region });
    products = (await sb.stream('/v4/products/stream', { filter: { createdAt: 0 }, sorting: { id: 'ASC' } })).lines.map(
      (l) => l.result,
    );
  });
  afterAll(() => sb?.close());

  it('runs with its own code filter: the matching products, name flattened to the region`s locales', async () => {
    const { filter, match } = CODE_FILTER[region](products);
    const file = join(ws.dir, `region-${region}.yml`);
    await writeFile(file, pipelineYaml(region, `${sb.url}${BASE_SUFFIX[region]}`, filter));
    const { code, stderr } = await runMain(['run', file], sandboxEnv(sb, { CATALOG_BASE_URL: undefined }));
    expect(code, stderr).toBe(0);
    const rows = await lines(join(ws.dir, `out-${region}.jsonl`));
    const want = products.filter(match);
    expect(want.length).toBeGreaterThan(0);
    expect(want.length).toBeLessThan(products.length);
    expect(rows.map((r) => r.id)).toEqual(want.map((p) => p.id));
    const locales = REGION_FACTS[region].locales;
    const nameColumns = Object.keys(rows[0]!).filter((k) => k.startsWith('name_'));
    expect(nameColumns.sort()).toEqual(locales.map((l) => `name_${l}`).sort());
    for (const [i, r] of rows.entries()) for (const l of locales) expect(r[`name_${l}`]).toBe(want[i]!.name[l] ?? null);
    // The profile serves the region's locales only: a locale outside them never appears.
    const others = LOCALES.filter((l) => !locales.includes(l));
    expect(products.some((p) => others.some((l) => p.name[l] !== undefined))).toBe(false);
  });

  it('a filter or a code the region does not take is refused before any request', async () => {
    const foreign = region === 'be' ? { pzn: '01234567' } : { cnk: '0012345' };
    const bad =
      region === 'fr' ? { cip13: '340091234567' } : region === 'de' ? { pzn: '1234567' } : { ean: '12345678901' };
    for (const [k, filter] of [foreign, { or: [{ status: 'active' }, bad] }].entries()) {
      const file = join(ws.dir, `refused-${region}-${k}.yml`);
      await writeFile(file, pipelineYaml(region, sb.url, filter));
      sb.resetStats();
      const env = sandboxEnv(sb, { CATALOG_BASE_URL: undefined });
      const run = await runMain(['run', file], env);
      const check = await runMain(['validate', file], env);
      expect(sb.stats.requests).toBe(0);
      for (const r of [run, check]) {
        expect(r.code, r.stderr).toBe(2);
        const errors = jsonLines(r.stderr).filter((l) => l.event === 'error');
        expect(errors.map((e) => e.code)).toEqual(['config.region']);
        const [error] = errors;
        if (k === 0) {
          const name = Object.keys(foreign)[0]!;
          expect(error!.path).toBe(`source.filter.${name}`);
          expect(error!.message).toContain(
            `region ${region} (${REGION_FACTS[region].country}) does not take the filter "${name}"`,
          );
          expect(error!.message).toContain('its regional product filters are:');
        } else {
          expect(error!.path).toBe(`source.filter.or[1].${Object.keys(bad)[0]}`);
          expect(error!.message).toContain(`"${Object.values(bad)[0]}" is not a valid`);
          expect(error!.message).toContain('it was not sent');
        }
      }
    }
  });
});

describe('validate and the dry run show the region and what it set', () => {
  it('validate: base URL, default locales, checks', async () => {
    const file = join(ws.dir, 'show-fr.yml');
    await writeFile(
      file,
      pipelineYaml('fr', 'https://api.medipim.fr/v4', { status: 'active' }).replace(
        ', baseUrl: "https://api.medipim.fr/v4"',
        '',
      ),
    );
    const { code, stdout, stderr } = await runMain(['validate', file], cleanEnv());
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('region fr (France), production: base URL https://api.medipim.fr');
    expect(stdout).toContain('transforms[0] flatten-locales locales: fr, en');
  });

  it('environment sandbox exists for be and fr only', async () => {
    const file = join(ws.dir, 'env-de.yml');
    await writeFile(
      file,
      pipelineYaml('de', 'x', { status: 'active' }).replace(', baseUrl: "x"', ', environment: sandbox'),
    );
    const { code, stderr } = await runMain(['validate', file, '--log-format', 'pretty'], cleanEnv());
    expect(code).toBe(2);
    expect(stderr).toContain('region de (Germany) has no sandbox environment');
    const be = join(ws.dir, 'env-be.yml');
    await writeFile(
      be,
      pipelineYaml('be', 'x', { status: 'active' }).replace(', baseUrl: "x"', ', environment: sandbox'),
    );
    const ok = await runMain(['validate', be], cleanEnv());
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('region be (Belgium), sandbox: base URL https://api.sandbox.medipim.be');
  });

  it('run --sandbox serves the profile named by the region (de: pzn, de/en), and the dry run says so', async () => {
    const file = join(ws.dir, 'sandbox-de.yml');
    await writeFile(file, pipelineYaml('de', 'x', { status: 'active' }).replace(', baseUrl: "x"', ''));
    const flags = ['--sandbox', '--sandbox-products', '120', '--sandbox-rate-limit', '0'];
    const dry = await runMain(['run', file, '--dry-run', '--log-format', 'pretty', ...flags], cleanEnv());
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('region de (Germany), production: base URL http://127.0.0.1:');
    expect(dry.stdout).toContain("from the embedded sandbox; the region's is https://api.medipim.de");
    expect(dry.stdout).toContain('transforms[0] flatten-locales locales: de, en');
    const { code, stderr } = await runMain(['run', file, ...flags], cleanEnv());
    expect(code, stderr).toBe(0);
    const rows = await lines(join(ws.dir, 'out-de.jsonl'));
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.filter((r) => r.pzn !== undefined).length).toBeGreaterThan(rows.length / 2);
    for (const r of rows) if (r.pzn !== undefined) expect(r.pzn).toMatch(/^\d{8}$/);
    expect(rows.some((r) => typeof r.name_de === 'string')).toBe(true);
    expect(rows.every((r) => r.cnk === undefined && r.name_nl === undefined)).toBe(true);
    const regions = rows.flatMap((r) => r.organizations.map((o: Rec) => o.contactInformation?.region));
    expect(regions.filter(Boolean).length).toBeGreaterThan(0);
    for (const region of regions) if (region) expect(region).toMatch(/^DE-[A-Z]{2}$/);
  });
});
