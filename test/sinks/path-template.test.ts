import { describe, expect, it } from 'vitest';
import { ConfigError, SinkError } from '../../src/errors.js';
import {
  escapePathValue,
  formatPart,
  HIVE_DEFAULT_PARTITION,
  PathTemplate,
} from '../../src/sinks/shared/path-template.js';

const run = { id: 'run-42', name: 'products-lake', startedAt: new Date('2026-01-02T23:59:59.999Z') };
const describeRecord = () => 'record id=P1';

describe('PathTemplate', () => {
  it('fills {name}, {run}, {date} (UTC) and zero-pads {part}', () => {
    const t = PathTemplate.parse('out/{name}/dt={date}/{run}-part-{part}.jsonl', run);
    expect(t.render([], 0)).toBe('out/products-lake/dt=2026-01-02/run-42-part-00000.jsonl');
    expect(t.render([], 12)).toBe('out/products-lake/dt=2026-01-02/run-42-part-00012.jsonl');
    expect(t.hasPart).toBe(true);
    expect(t.fields).toEqual([]);
    expect(formatPart(123456)).toBe('123456');
  });

  it('takes Hive partitions key={field} from record fields, including nested paths', () => {
    const t = PathTemplate.parse('out/status={status}/kind={meta.kind}/p.parquet', run);
    expect(t.fields).toEqual([
      { key: 'status', path: ['status'] },
      { key: 'kind', path: ['meta', 'kind'] },
    ]);
    const values = t.partitionValues({ status: 'active', meta: { kind: 7 } }, describeRecord);
    expect(t.render(values, 0)).toBe('out/status=active/kind=7/p.parquet');
    expect(t.fixedPrefix()).toBe('out/');
  });

  it('writes null, missing and empty values to the Hive default partition and escapes the rest', () => {
    const t = PathTemplate.parse('s={s}/x.jsonl', run);
    expect(t.partitionValues({ s: null }, describeRecord)).toEqual([HIVE_DEFAULT_PARTITION]);
    expect(t.partitionValues({}, describeRecord)).toEqual([HIVE_DEFAULT_PARTITION]);
    expect(t.partitionValues({ s: '' }, describeRecord)).toEqual([HIVE_DEFAULT_PARTITION]);
    expect(t.partitionValues({ s: 'a/b=c%d' }, describeRecord)).toEqual(['a%2Fb%3Dc%25d']);
    expect(t.partitionValues({ s: '..' }, describeRecord)).toEqual(['%2E%2E']);
    expect(t.partitionValues({ s: 'Δ8-THC' }, describeRecord)).toEqual(['Δ8-THC']);
    expect(t.partitionValues({ s: 12345678901234567890n }, describeRecord)).toEqual(['12345678901234567890']);
    expect(escapePathValue('a\nb')).toBe('a%0Ab');
  });

  it('rejects an object or array partition value naming the field and the record', () => {
    const t = PathTemplate.parse('s={s}/x.jsonl', run);
    expect(() => t.partitionValues({ s: { a: 1 } }, describeRecord)).toThrow(SinkError);
    expect(() => t.partitionValues({ s: [1] }, describeRecord)).toThrow(
      /partition field "s" of record id=P1 is an array/,
    );
  });

  it('rejects unknown placeholders with a suggestion, and stray braces', () => {
    expect(() => PathTemplate.parse('out/{dat}.jsonl', run)).toThrow(ConfigError);
    expect(() => PathTemplate.parse('out/{dat}.jsonl', run)).toThrow(
      /unknown placeholder \{dat\}; did you mean \{date\}\?/,
    );
    expect(() => PathTemplate.parse('out/{status}.jsonl', run)).toThrow(/key=\{field\}/);
    expect(() => PathTemplate.parse('out/{date.jsonl', run)).toThrow(/unmatched "\{"/);
    expect(() => PathTemplate.parse('out/date}.jsonl', run)).toThrow(/unmatched "\}"/);
    expect(() => PathTemplate.parse('k={a b}/x', run, 'key')).toThrow(/^key "k=\{a b\}\/x"/);
  });

  it('treats reserved names as run values even in key= form', () => {
    const t = PathTemplate.parse('dt={date}/x.parquet', run);
    expect(t.fields).toEqual([]);
    expect(t.isDynamic).toBe(false);
    expect(t.render([], 0)).toBe('dt=2026-01-02/x.parquet');
  });
});
