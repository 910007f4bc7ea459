// select-media-format: picks image URLs from a product's photos[] and
// frontals[] (or from media-stream records) by a preference list of formats.
// A format is a size (thumbnail 200px, medium 450px, large 900px, huge 1500px)
// and an encoding (jpeg, webp, png). Photos and frontals name them differently
// (photos: large/largeWebp; frontals: largeJpg/largeWebp, medium/mediumJpeg,
// and on the live service also large/largePng/huge/hugePng, where the
// unsuffixed frontal key holds a PNG); a requested name matches its
// size+encoding under either scheme.
import { z } from 'zod';
import { FrontalPhotoType, PhotoType } from '../catalog/index.js';
import { ConfigError } from '../errors.js';
import { shallowCopy } from '../core/field-path.js';
import { defineStage, type StageContext } from '../core/stage.js';
import { keepOrigin } from '../core/origin.js';
import { RecordTransform, type RecordOutput } from './record-transform.js';
import { ResourceOption, resolveResource } from './resource.js';
import { upsertFields, type FieldType, type RecordSchema, type SchemaEnv } from '../core/record-schema.js';
import type { WithOptionDocs } from '../generated/stage-option-docs.js';

export const MEDIA_SIZES = ['thumbnail', 'medium', 'large', 'huge'] as const;
export type MediaSize = (typeof MEDIA_SIZES)[number];
type Encoding = 'jpeg' | 'webp' | 'png';

/** Every name a format can be asked by: `large` (jpeg), `largeJpg`, `largeJpeg`, `largeWebp`, `largePng`, for each size. */
export const MEDIA_FORMAT_NAMES = MEDIA_SIZES.flatMap(
  (s) => [s, `${s}Jpg`, `${s}Jpeg`, `${s}Webp`, `${s}Png`] as const,
) as Array<MediaSize | `${MediaSize}Jpg` | `${MediaSize}Jpeg` | `${MediaSize}Webp` | `${MediaSize}Png`>;
export type MediaFormatName = (typeof MEDIA_FORMAT_NAMES)[number];

/**
 * The default preference: for the same size webp (smallest files), then jpeg, then png (frontals
 * of the live service often have only PNG variants). See docs/stages.md (select-media-format).
 */
export const DEFAULT_MEDIA_FORMATS: MediaFormatName[] = ['largeWebp', 'large', 'largePng'];

function parseFormatName(name: string): { size: MediaSize; encoding: Encoding } {
  for (const size of MEDIA_SIZES) {
    if (!name.startsWith(size)) continue;
    const rest = name.slice(size.length);
    if (rest === 'Webp') return { size, encoding: 'webp' };
    if (rest === 'Png') return { size, encoding: 'png' };
    if (rest === '' || rest === 'Jpg' || rest === 'Jpeg') return { size, encoding: 'jpeg' };
  }
  throw new ConfigError(`select-media-format: unknown format "${name}"`, { path: 'formats' });
}

/**
 * The keys that hold a size+encoding, the requested name first where it names that encoding:
 * photos: large jpeg -> large, largeJpg, largeJpeg; frontals: largeJpg, largeJpeg, and for the
 * unsuffixed name `large` also the frontal's own `large` (a PNG on the live service, so taken
 * only when no explicit JPEG key is there; an explicit largeJpg never takes it);
 * webp -> sizeWebp; png -> sizePng.
 */
function keysFor(name: string, frontal: boolean): string[] {
  const { size, encoding } = parseFormatName(name);
  if (encoding === 'webp') return [`${size}Webp`];
  if (encoding === 'png') return [`${size}Png`];
  if (frontal) return name === size ? [`${size}Jpg`, `${size}Jpeg`, size] : [`${size}Jpg`, `${size}Jpeg`];
  return [name, ...[size, `${size}Jpg`, `${size}Jpeg`].filter((k) => k !== name)];
}

interface Preference {
  /** What the format column shows: the requested name, or (fallback: any) the key found. */
  name: string | undefined;
  /** Keys to look for in a photo's formats. */
  keys: string[];
  /** Keys to look for in a frontal's formats. */
  frontalKeys: string[];
}

function preference(name: string | undefined, format: string, exclude?: ReadonlySet<string>): Preference {
  const keep = (keys: string[]) => (exclude ? keys.filter((k) => !exclude.has(k)) : keys);
  return { name, keys: keep(keysFor(format, false)), frontalKeys: keep(keysFor(format, true)) };
}

/** Every other format, nearest size to the first preference first (larger before smaller), same encoding first. */
function nearestOrder(first: string, exclude: ReadonlySet<string>): Preference[] {
  const { size, encoding } = parseFormatName(first);
  const at = MEDIA_SIZES.indexOf(size);
  const sizes = [...MEDIA_SIZES].sort((a, b) => {
    const da = Math.abs(MEDIA_SIZES.indexOf(a) - at);
    const db = Math.abs(MEDIA_SIZES.indexOf(b) - at);
    return da - db || MEDIA_SIZES.indexOf(b) - MEDIA_SIZES.indexOf(a);
  });
  const encodings =
    encoding === 'webp' ? ['Webp', '', 'Png'] : encoding === 'png' ? ['Png', 'Webp', ''] : ['', 'Webp', 'Png'];
  const out: Preference[] = [];
  for (const s of sizes) {
    for (const enc of encodings) {
      const p = preference(undefined, `${s}${enc}`, exclude);
      if (p.keys.length || p.frontalKeys.length) out.push(p);
    }
  }
  return out;
}

const FormatName = z.enum(MEDIA_FORMAT_NAMES as [MediaFormatName, ...MediaFormatName[]]);

export const SelectMediaFormatOptionsSchema = z.strictObject({
  resource: ResourceOption,
  formats: z
    .array(FormatName)
    .min(1)
    .default(DEFAULT_MEDIA_FORMATS)
    .describe(
      'Formats in order of preference, by size (thumbnail, medium, large, huge) and encoding: large = jpeg (also largeJpg, largeJpeg), largeWebp, largePng; matched under the photo and the frontal naming (default: largeWebp, large, largePng)',
    ),
  fallback: z
    .enum(['none', 'any'])
    .default('none')
    .describe(
      'When no photo has a listed format: leave the columns null (none), or take the nearest available size (any; the format column then names the key found)',
    ),
  select: z
    .enum(['first', 'all'])
    .default('first')
    .describe(
      'The first suitable photo by displayOrder (url/format columns), or all of them (lists of urls and formats)',
    ),
  from: z
    .array(z.enum(['photos', 'frontals']))
    .min(1)
    .default(['photos', 'frontals'])
    .describe('Which lists of a product to choose from; each gives its own columns'),
  photoType: z
    .array(PhotoType)
    .min(1)
    .optional()
    .describe('Only photos of these types (packshot, productshot, lifestyle_image, pillshot)'),
  frontalPhotoType: z
    .array(FrontalPhotoType)
    .min(1)
    .optional()
    .describe('Only frontals of these types (packshot, productshot)'),
  locales: z
    .array(z.string())
    .min(1)
    .optional()
    .describe('Only photos suited to one of these locales; photos without locales suit every locale'),
  targetGroups: z
    .array(z.string())
    .min(1)
    .optional()
    .describe('Only photos for one of these target groups; photos without target groups suit every group'),
  photosColumn: z
    .string()
    .min(1)
    .default('photo')
    .describe('Prefix of the photo columns: photo_url, photo_format (select: all: photo_urls, photo_formats)'),
  frontalsColumn: z
    .string()
    .min(1)
    .default('frontal')
    .describe(
      'Prefix of the frontal columns: frontal_url, frontal_format (select: all: frontal_urls, frontal_formats)',
    ),
  keepOriginal: z
    .boolean()
    .default(true)
    .describe('Keep photos[] and frontals[] (formats on media records) beside the new columns'),
});

/** Options as a caller writes them; each key documented on hover (src/generated/stage-option-docs.ts). */
export type SelectMediaFormatOptions = WithOptionDocs<
  'select-media-format',
  z.input<typeof SelectMediaFormatOptionsSchema>
>;

interface MediaItem {
  formats?: Record<string, unknown>;
  displayOrder?: number;
  photoType?: string;
  locales?: string[];
  targetGroups?: string[];
}

interface ListPlan {
  field: 'photos' | 'frontals';
  urlColumn: string;
  formatColumn: string;
  types: ReadonlySet<string> | undefined;
  /** Photos only: locale and target-group filters. */
  locales: readonly string[] | undefined;
  targetGroups: readonly string[] | undefined;
}

function intersects(list: unknown, wanted: readonly string[]): boolean {
  if (!Array.isArray(list) || list.length === 0) return true;
  for (let i = 0; i < wanted.length; i++) if (list.includes(wanted[i])) return true;
  return false;
}

const byOrder = (a: { order: number }, b: { order: number }) => a.order - b.order;

function orderOf(item: MediaItem): number {
  const o = item.displayOrder;
  return typeof o === 'number' ? o : Number.MAX_SAFE_INTEGER;
}

export class SelectMediaFormatTransform extends RecordTransform {
  readonly #preferences: Preference[];
  readonly #fallback: Preference[];
  /** The preference lists tried in turn by select: first (the fallback list only when nothing matched). */
  readonly #passes: Preference[][];
  /** Fields left out when keepOriginal is false. */
  readonly #removed: ReadonlySet<string>;
  readonly #all: boolean;
  readonly #lists: ListPlan[];
  readonly #media: boolean;
  readonly #keepOriginal: boolean;
  /** Reused by `#resolve`; a stage handles one record at a time. */
  #chosenName: string | undefined = undefined;
  /** The record being handled is the chain's own (`processRecord`'s `owned`). */
  #owned = false;

  constructor(options: z.output<typeof SelectMediaFormatOptionsSchema>, ctx: StageContext) {
    super('select-media-format', ctx);
    const resource = resolveResource('select-media-format', options.resource, ctx, 'product');
    if (resource.name !== 'product' && resource.name !== 'media') {
      throw new ConfigError(`select-media-format: works on product and media records, not ${resource.name}`, {
        path: 'resource',
      });
    }
    this.#media = resource.name === 'media';
    this.#preferences = options.formats.map((name) => preference(name, name));
    const listed = new Set(this.#preferences.flatMap((p) => p.keys));
    this.#fallback = options.fallback === 'any' ? nearestOrder(options.formats[0]!, listed) : [];
    this.#passes = this.#fallback.length ? [this.#preferences, this.#fallback] : [this.#preferences];
    this.#all = options.select === 'all';
    this.#keepOriginal = options.keepOriginal;
    this.#removed = new Set(this.#media ? ['formats'] : options.from);
    const suffix = this.#all ? 's' : '';
    this.#lists = options.from.map((field) => {
      const prefix = field === 'photos' ? options.photosColumn : options.frontalsColumn;
      const types = field === 'photos' ? options.photoType : options.frontalPhotoType;
      return {
        field,
        urlColumn: `${prefix}_url${suffix}`,
        formatColumn: `${prefix}_format${suffix}`,
        types: types ? new Set<string>(types) : undefined,
        locales: field === 'photos' ? options.locales : undefined,
        targetGroups: field === 'photos' ? options.targetGroups : undefined,
      };
    });
  }

  processRecord(record: object, owned?: boolean): RecordOutput {
    this.#owned = owned === true;
    return this.#media
      ? this.#mediaRecord(record as MediaItem & { url?: unknown })
      : this.#product(record as Record<string, unknown>);
  }

  protected override get returnsOwnedRecords(): boolean {
    return true;
  }

  /**
   * The record to add columns to, without the media lists unless they are kept: a copy, or the
   * record itself when the chain owns it and nothing is removed (`delete` would turn it into a
   * slow dictionary object).
   */
  #copy(record: Record<string, unknown>): Record<string, unknown> {
    if (this.#keepOriginal) return this.#owned ? record : shallowCopy(record);
    const out: Record<string, unknown> = {};
    const removed = this.#removed;
    for (const key in record) if (!removed.has(key)) out[key] = record[key];
    return keepOrigin(record, out);
  }

  #product(record: Record<string, unknown>): object {
    const out = this.#copy(record);
    for (const plan of this.#lists) {
      const list = record[plan.field];
      const items = Array.isArray(list) ? (list as MediaItem[]) : undefined;
      if (this.#all) this.#selectAll(items, plan, out);
      else this.#selectFirst(items, plan, out);
    }
    return out;
  }

  #mediaRecord(record: MediaItem & { url?: unknown; type?: unknown; kind?: unknown }): object {
    const formats = record.formats;
    const frontal = record.type === 'frontal' || record.kind === 'frontal';
    const out = this.#copy(record as Record<string, unknown>);
    if (typeof formats !== 'object' || formats === null) {
      // a link (no formats): its own url stays
      if (out.url === undefined) out.url = null;
      out.format = null;
      return out;
    }
    const url = this.#resolve(formats, this.#preferences, frontal) ?? this.#resolve(formats, this.#fallback, frontal);
    out.url = url ?? null;
    out.format = url === undefined ? null : this.#chosenName;
    return out;
  }

  /** The URL of the first preference found in `formats` (its name in `#chosenName`), or undefined. */
  #resolve(formats: Record<string, unknown>, preferences: readonly Preference[], frontal: boolean): string | undefined {
    for (let i = 0; i < preferences.length; i++) {
      const p = preferences[i]!;
      const keys = frontal ? p.frontalKeys : p.keys;
      for (let j = 0; j < keys.length; j++) {
        const url = formats[keys[j]!];
        if (typeof url === 'string' && url !== '') {
          this.#chosenName = p.name ?? keys[j];
          return url;
        }
      }
    }
    return undefined;
  }

  #suitable(item: unknown, plan: ListPlan): item is MediaItem {
    if (typeof item !== 'object' || item === null) return false;
    const m = item as MediaItem;
    if (typeof m.formats !== 'object' || m.formats === null) return false;
    if (plan.types && !plan.types.has(m.photoType as string)) return false;
    if (plan.locales && !intersects(m.locales, plan.locales)) return false;
    if (plan.targetGroups && !intersects(m.targetGroups, plan.targetGroups)) return false;
    return true;
  }

  /** The lowest displayOrder among suitable items with a preferred format; the fallback list only if none has. */
  #selectFirst(items: MediaItem[] | undefined, plan: ListPlan, out: Record<string, unknown>): void {
    let url: string | undefined;
    let name: string | undefined;
    if (items) {
      for (const preferences of this.#passes) {
        let best = Number.POSITIVE_INFINITY;
        for (let i = 0; i < items.length; i++) {
          const item = items[i];
          if (!this.#suitable(item, plan)) continue;
          const order = orderOf(item);
          if (order >= best) continue;
          const found = this.#resolve(item.formats!, preferences, plan.field === 'frontals');
          if (found !== undefined) {
            best = order;
            url = found;
            name = this.#chosenName;
          }
        }
        if (url !== undefined) break;
      }
    }
    out[plan.urlColumn] = url ?? null;
    out[plan.formatColumn] = url === undefined ? null : name;
  }

  /** Every suitable item in displayOrder with the format chosen for it; items without any are left out. */
  #selectAll(items: MediaItem[] | undefined, plan: ListPlan, out: Record<string, unknown>): void {
    const chosen: Array<{ order: number; url: string; name: string | undefined }> = [];
    if (items) {
      for (let i = 0; i < items.length; i++) {
        const item = items[i];
        if (!this.#suitable(item, plan)) continue;
        const frontal = plan.field === 'frontals';
        const url =
          this.#resolve(item.formats!, this.#preferences, frontal) ??
          this.#resolve(item.formats!, this.#fallback, frontal);
        if (url !== undefined) chosen.push({ order: orderOf(item), url, name: this.#chosenName });
      }
      chosen.sort(byOrder);
    }
    out[plan.urlColumn] = chosen.map((c) => c.url);
    out[plan.formatColumn] = chosen.map((c) => c.name);
  }
}

/** The URL and format columns (strings, or lists of strings with select: all), the media lists left out unless kept. */
function selectMediaFormatSchema(
  input: RecordSchema,
  options: z.output<typeof SelectMediaFormatOptionsSchema>,
  env: SchemaEnv,
): RecordSchema {
  const source = env.resource === undefined ? undefined : { type: '', resource: env.resource };
  const media = resolveResource('select-media-format', options.resource, { source }, 'product').name === 'media';
  const removed = new Set<string>(media ? ['formats'] : options.from);
  const kept = options.keepOriginal ? input.fields : input.fields.filter((f) => !removed.has(f.name));
  const string: FieldType = { kind: 'string' };
  if (media)
    return {
      fields: upsertFields(kept, [
        { name: 'url', type: string },
        { name: 'format', type: string },
      ]),
    };
  const type: FieldType = options.select === 'all' ? { kind: 'list', element: string } : string;
  const suffix = options.select === 'all' ? 's' : '';
  const added = options.from.flatMap((field) => {
    const prefix = field === 'photos' ? options.photosColumn : options.frontalsColumn;
    return [
      { name: `${prefix}_url${suffix}`, type },
      { name: `${prefix}_format${suffix}`, type },
    ];
  });
  return { fields: upsertFields(kept, added) };
}

export const selectMediaFormatStage = defineStage({
  kind: 'transform',
  type: 'select-media-format',
  description:
    'Chooses image URLs from photos[] and frontals[] (or media records) by format preference (largeWebp, large...), across both naming schemes; writes the URL and the format actually chosen',
  options: SelectMediaFormatOptionsSchema,
  schema: selectMediaFormatSchema,
  create: (options, ctx) => new SelectMediaFormatTransform(options, ctx),
});
