// Every file in pipelines/ through its whole life on the sandbox's `be` profile (shipped-life.ts).
import { vi } from 'vitest';
import { shippedPipelinesLife } from './shipped-life.js';

// Before any module loads: the in-process runs log their storage steps (src/storage/step-hook.ts
// reads the variable once), so the test knows where half-way through a run is.
vi.hoisted(() => {
  process.env.CATALOG_STREAMS_TEST_STEP_LOG = `${process.env.TMPDIR ?? '/tmp'}/life-steps-be-${process.pid}-${Date.now()}.log`;
});

shippedPipelinesLife('be');
