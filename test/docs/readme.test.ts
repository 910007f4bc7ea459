import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { builtinStages } from '../../src/pipeline/builtins.js';
import { formatStageReference } from '../../src/pipeline/describe-options.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const stagesDoc = readFileSync(new URL('../../docs/stages.md', import.meta.url), 'utf8');

describe('README and the stage reference', () => {
  it('docs/stages.md has the stage reference generated from the schemas (run `npm run docs` after changing options)', () => {
    const block = stagesDoc.slice(
      stagesDoc.indexOf('<!-- stages:begin -->') + '<!-- stages:begin -->'.length,
      stagesDoc.indexOf('<!-- stages:end -->'),
    );
    expect(block).toBe(`\n${formatStageReference(builtinStages)}`);
  });

  it('the README names the two set-up commands and links the stage reference; docs/stages.md every stage type', () => {
    expect(readme).toContain('npm ci && npm run demo');
    expect(readme).toContain('npm ci && npm test');
    expect(readme).toContain('(docs/stages.md)');
    for (const def of builtinStages) expect(stagesDoc).toContain(`\`${def.type}\``);
  });

  it('the README stays a front page: at most ~250 lines, the three jobs, links into docs/', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(250);
    for (const page of ['docs/lake-loading.md', 'docs/nightly-runs.md', 'docs/transforms-in-code.md'])
      expect(readme).toContain(`(${page})`);
  });
});
