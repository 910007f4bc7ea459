// docs/changing-catalog.md: its sandbox changes example is a schedule the sandbox accepts as written.
import { readFile } from 'node:fs/promises';
import { afterEach, expect, it } from 'vitest';
import { SandboxChangesSchema } from '../../src/sandbox/index.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

let sb: TestSandbox | undefined;
afterEach(() => sb?.close());

it('the JSON example of docs/changing-catalog.md is a valid changes schedule, over HTTP too', async () => {
  const doc = await readFile(new URL('../../docs/changing-catalog.md', import.meta.url), 'utf8');
  const blocks = [...doc.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!));
  expect(blocks).toHaveLength(1);
  expect(SandboxChangesSchema.safeParse(blocks[0]).success).toBe(true);
  sb = await startTestSandbox({ products: 50, pending: 5 });
  const answer = await sb.post('/_sandbox/changes', blocks[0]);
  expect(answer.status, answer.text).toBe(200);
});
