// Which files a media or product record asks the mirror for: the chosen format of its photos and
// frontals and its brochure PDFs (docs/media-mirror.md, "What is mirrored"). A pure function of the
// record and the options, so the dry run and the mirror agree.
import { createHash } from 'node:crypto';
import { isPlainObject } from '../../values.js';

export type MediaFileType = 'photo' | 'frontal' | 'brochure';

/** What the mirror downloads once, whatever number of records name it. */
export interface MediaTarget {
  url: string;
  /** The store-relative name of the file (`files/<URL path>`). */
  rel: string;
  /** The URL's file name is a content name (a long hex stem): its bytes never change. */
  contentName: boolean;
  mediaId: string | undefined;
  type: MediaFileType;
  /** The format key chosen (`largeWebp`), or `pdf` for a brochure. */
  format: string;
  /** The Content-Type the answer must have (`image/` accepts any image type). */
  expect: string;
  productIds: Set<string>;
}

export interface TargetOptions {
  /** Format keys in order of preference; the first a photo or frontal has is mirrored. */
  formats: readonly string[];
  /** `frontal-or-photo`: a product's first frontal, its first photo when it has none; `all`: every one. */
  images: 'frontal-or-photo' | 'all' | 'none';
  brochures: boolean;
}

/** The files folder: everything the mirror downloads is below it, apart from its table and state. */
export const FILES_FOLDER = 'files/';
const SAFE_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const CONTENT_STEM = /^[0-9a-f]{16,}$/i;

/**
 * The stored name of a URL: its path under `files/`. The live service names files by content
 * (`/media/large/<hex>.webp`), so the URL path is already unique per content and readable; a URL
 * whose path is not plain safe segments (or has a query) is stored by the sha256 of the URL.
 */
export function storedName(url: URL): { rel: string; contentName: boolean } {
  const segments = url.pathname.split('/').filter((s) => s !== '');
  const safe =
    url.search === '' && segments.length > 0 && segments.length <= 8 && segments.every((s) => SAFE_SEGMENT.test(s));
  if (!safe) {
    const ext = /\.(jpe?g|png|webp|pdf)$/i.exec(url.pathname)?.[0] ?? '';
    return {
      rel: `${FILES_FOLDER}by-url/${createHash('sha256').update(url.href).digest('hex')}${ext}`,
      contentName: false,
    };
  }
  const stem = segments[segments.length - 1]!.replace(/\.[^.]*$/, '');
  return { rel: FILES_FOLDER + segments.join('/'), contentName: CONTENT_STEM.test(stem) };
}

/** The Content-Type a format key promises; a plain size name (`large`) may be any image type. */
export function expectedType(format: string): string {
  if (format === 'pdf') return 'application/pdf';
  if (/webp/i.test(format)) return 'image/webp';
  if (/png/i.test(format)) return 'image/png';
  if (/jpe?g/i.test(format)) return 'image/jpeg';
  return 'image/';
}

type Item = Record<string, unknown>;

const items = (v: unknown): Item[] => (Array.isArray(v) ? v.filter(isPlainObject) : []);
const idOf = (v: unknown): string | undefined =>
  typeof v === 'string' || typeof v === 'number' ? String(v) : undefined;
const order = (a: Item, b: Item) => Number(a.displayOrder ?? Infinity) - Number(b.displayOrder ?? Infinity);

/** The first format of `options.formats` an image item has, with its URL. */
function chosenFormat(item: Item, formats: readonly string[]): { format: string; url: string } | undefined {
  const available = item.formats;
  if (!isPlainObject(available)) return undefined;
  for (const format of formats) {
    const url = available[format];
    if (typeof url === 'string' && url !== '') return { format, url };
  }
  return undefined;
}

interface Pick {
  item: Item;
  type: MediaFileType;
  format: string;
  url: string;
}

function imagePicks(record: Item, options: TargetOptions): Pick[] {
  const pick = (type: MediaFileType) => (item: Item) => {
    const chosen = chosenFormat(item, options.formats);
    return chosen ? [{ item, type, ...chosen }] : [];
  };
  const frontals = items(record.frontals).sort(order).flatMap(pick('frontal'));
  const photos = items(record.photos).sort(order).flatMap(pick('photo'));
  if (options.images === 'all') return [...frontals, ...photos];
  if (options.images === 'none') return [];
  return frontals.length > 0 ? frontals.slice(0, 1) : photos.slice(0, 1);
}

/** Only brochures are files (PDFs); `app`, `video` and `website` links are pages, not mirrored. */
function brochurePicks(links: Item[]): Pick[] {
  return links.flatMap((item) =>
    item.linkType === 'brochure' && typeof item.url === 'string' && item.url !== ''
      ? [{ item, type: 'brochure' as const, format: 'pdf', url: item.url }]
      : [],
  );
}

const isProduct = (r: Item) => Array.isArray(r.photos) || Array.isArray(r.frontals) || Array.isArray(r.links);

/** The picks of a media record (media.stream): the item itself, if it is an image or a brochure. */
function mediaPicks(record: Item, options: TargetOptions): Pick[] {
  const kind = record.kind ?? record.type;
  if (kind === 'link' || record.linkType !== undefined) return options.brochures ? brochurePicks([record]) : [];
  if (options.images === 'none') return [];
  const chosen = chosenFormat(record, options.formats);
  return chosen ? [{ item: record, type: kind === 'frontal' ? 'frontal' : 'photo', ...chosen }] : [];
}

/** The files a record asks for; `invalid` is told of a URL that cannot be fetched (not http/https). */
export function targetsOf(record: Item, options: TargetOptions, invalid: (url: string) => void): MediaTarget[] {
  const product = isProduct(record);
  const picks = product
    ? [...imagePicks(record, options), ...(options.brochures ? brochurePicks(items(record.links)) : [])]
    : mediaPicks(record, options);
  const productIds = product
    ? [idOf(record.id)].filter((id): id is string => id !== undefined)
    : (Array.isArray(record.products) ? record.products : []).map(String);
  const out: MediaTarget[] = [];
  for (const pick of picks) {
    let url: URL;
    try {
      url = new URL(pick.url);
    } catch {
      invalid(pick.url);
      continue;
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      invalid(pick.url);
      continue;
    }
    const mediaId = product ? idOf(pick.item.id) : idOf(record.id);
    const { rel, contentName } = storedName(url);
    const expect = expectedType(pick.format);
    out.push({
      url: url.href,
      rel,
      contentName,
      mediaId,
      type: pick.type,
      format: pick.format,
      expect,
      productIds: new Set(productIds),
    });
  }
  return out;
}

/** Adds `targets` to `into`, one entry per stored name: a file named by many records is fetched once. */
export function mergeTargets(into: Map<string, MediaTarget>, targets: readonly MediaTarget[]): void {
  for (const t of targets) {
    const known = into.get(t.rel);
    if (!known) into.set(t.rel, t);
    else for (const id of t.productIds) known.productIds.add(id);
  }
}
