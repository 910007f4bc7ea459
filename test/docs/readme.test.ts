import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { builtinStages } from '../../src/pipeline/builtins.js';
import { formatStageReference } from '../../src/pipeline/describe-options.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

describe('README', () => {
  it('has the stage reference generated from the schemas (run `npm run docs` after changing options)', () => {
    const block = readme.slice(
      readme.indexOf('<!-- stages:begin -->') + '<!-- stages:begin -->'.length,
      readme.indexOf('<!-- stages:end -->'),
    );
    expect(block).toBe(`\n${formatStageReference(builtinStages)}`);
  });

  it('names the two set-up commands and every registered stage type', () => {
    expect(readme).toContain('npm ci && npm run demo');
    expect(readme).toContain('npm ci && npm test');
    for (const def of builtinStages) expect(readme).toContain(`\`${def.type}\``);
  });
});
