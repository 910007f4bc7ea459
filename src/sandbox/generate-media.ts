// Generates media: photos, frontal photos and links. Each product owns a run of
// media ids (`Dataset.mediaStart`); lifestyle photos and links may also be
// linked to the next one or two products (a product line sharing a picture or
// a website), so one media item can belong to several products. Only a byte of
// facts and two timestamps per media item are stored; records are rebuilt from
// (seed, media index) when served.
import type { JsonFragments } from './json-fragments.js';
import { Rng, rngFor } from './random.js';
import { GENERATION_EPOCH, SALT } from './timeline.js';
import { localeListJson } from './json-fragments.js';
import { LIVE_TARGET_GROUPS, TARGET_GROUPS, VISIBLE_SIDES } from './vocabulary.js';
import { type SandboxProfile, regionMask } from './profiles.js';
import { LINK_TYPES } from '../catalog/endpoints/reference.js';

/**
 * What media records are drawn from: the dataset's columns and lookups (Dataset implements it).
 * Declared here rather than imported from dataset.ts, which imports this file.
 */
export interface MediaSource {
  readonly seed: number;
  readonly fragments: JsonFragments;
  readonly liveFragments: { readonly photoOrganizations: readonly string[] } | undefined;
  readonly organization1: Uint16Array;
  readonly mediaInfo: Uint8Array;
  readonly mediaLocales: Uint8Array;
  readonly mediaCreatedAt: Uint32Array;
  readonly mediaUpdatedAt: Uint32Array;
  mediaOwner(m: number): number;
  mediaProducts(m: number): string[];
  /** Base URL of the asset host the media URLs point at (sandbox/asset-host.ts). */
  readonly assetBase: string;
  /** How many times media item m's files were replaced (0: never): each replacement is new content under new URLs. */
  mediaRevision(m: number): number;
}

export const MEDIA_KINDS = ['photo', 'frontal', 'link'] as const;
export type MediaKind = (typeof MEDIA_KINDS)[number];
export const PHOTO_TYPES = ['packshot', 'productshot', 'lifestyle_image', 'pillshot'] as const;
export const KIND_PHOTO = 0;
export const KIND_FRONTAL = 1;
export const KIND_LINK = 2;
const LIFESTYLE = 2;

/** The stored byte: kind (2 bits), photo type (2), shared with next products (2), a format missing (1). */
export const mediaInfo = {
  kind: (info: number) => info & 3,
  photoType: (info: number) => (info >> 2) & 3,
  share: (info: number) => (info >> 4) & 3,
  lacksFormat: (info: number) => (info >> 6) & 1,
  pack: (kind: number, photoType: number, share: number, lacksFormat: boolean) =>
    kind | (photoType << 2) | (share << 4) | (lacksFormat ? 64 : 0),
};

const SIZE_NAMES: Record<string, string> = { '200': 'thumbnail', '450': 'medium', '900': 'large', '1500': 'huge' };

/**
 * What names media item m's files: its id, and the revision once its files were replaced. The
 * live host names files by content, so a new upload is a new URL (a mirror downloads it) while an
 * untouched item keeps its URLs whatever else moves.
 */
export function fileKey(ds: MediaSource, m: number): string {
  const rev = ds.mediaRevision(m);
  return rev === 0 ? String(m + 1) : `${m + 1}~${rev}`;
}

/**
 * The URL of media item `id`'s file `file` (`900.webp`, `1500-2.png`) in the live shape
 * `<base>/media/{thumbnail|medium|large|huge}/<hex>.{jpeg|png|webp}`: a hex name, stable per item
 * and file; `id` is the item's `fileKey` (its id, with its revision once replaced).
 */
export function mediaFileUrl(base: string, id: number | string, file: string): string {
  const [stem, ext] = file.split('.') as [string, string];
  const size = SIZE_NAMES[stem.split('-')[0]!] ?? 'large';
  return `${base}/media/${size}/${hexName(`${id}/${file}`)}.${ext === 'jpg' ? 'jpeg' : ext}`;
}

/** A brochure's PDF URL on the asset host. */
export const brochureUrl = (base: string, id: number | string) =>
  `${base}/media/brochures/${hexName(`${id}/brochure`)}.pdf`;

/** 24 hex digits from a string (FNV-1a, three lanes): cheap, deterministic, not a secret. */
function hexName(key: string): string {
  let out = '';
  for (let lane = 0; lane < 3; lane++) {
    let h = (0x811c9dc5 ^ (lane * 0x9e3779b9)) >>> 0;
    for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193) >>> 0;
    out += h.toString(16).padStart(8, '0');
  }
  return out;
}

/** The link type of media item `m` when it is a link (the media `linkType` filter reads it too). */
export const linkTypeOf = (m: number): (typeof LINK_TYPES)[number] => LINK_TYPES[(m + 1) % LINK_TYPES.length]!;
const DAY = 86_400;

export interface MediaDraw {
  info: number;
  /** Locale mask of the languages the media suits. */
  locales: number;
  createdAt: number;
  updatedAt: number;
}

/** The stored facts of media item `m`, owned by a product created at `ownerCreatedAt`. */
export function drawMedia(
  seed: number,
  m: number,
  kind: number,
  ownerCreatedAt: number,
  profile: SandboxProfile = 'spec',
): MediaDraw {
  const rng = rngFor(seed, SALT.media, m);
  const photoType =
    kind === KIND_FRONTAL
      ? rng.int(2)
      : rng.weighted([
          [0, 50],
          [1, 25],
          [LIFESTYLE, 15],
          [3, 10],
        ] as const);
  const share =
    kind === KIND_PHOTO && photoType === LIFESTYLE
      ? rng.weighted([
          [0, 50],
          [1, 30],
          [2, 20],
        ] as const)
      : kind === KIND_LINK
        ? rng.weighted([
            [0, 60],
            [1, 40],
          ] as const)
        : 0;
  const lacksFormat = rng.chance(kind === KIND_FRONTAL ? 0.3 : 0.1);
  const locales = rng.chance(0.5) ? 0b1111 : rng.between(1, 15);
  const createdAt = Math.min(GENERATION_EPOCH - 1, ownerCreatedAt + rng.int(400 * DAY));
  const updatedAt = rng.chance(0.4) ? createdAt : createdAt + rng.int(GENERATION_EPOCH - createdAt);
  const served = profile === 'spec' ? locales : regionMask(profile, locales);
  return { info: mediaInfo.pack(kind, photoType, share, lacksFormat), locales: served, createdAt, updatedAt };
}

/** Per-record details that no filter looks at: drawn when the record is built. */
function details(seed: number, m: number): { rng: Rng } {
  return { rng: rngFor(seed, SALT.mediaRecord, m) };
}

export function photoFormatsJson(base: string, id: number | string, lacks: boolean): string {
  const u = (file: string) => mediaFileUrl(base, id, file);
  // Small source images have no huge variants.
  const huge = lacks ? '' : `,"huge":"${u('1500.jpg')}","hugeWebp":"${u('1500.webp')}"`;
  return `{"thumbnail":"${u('200.jpg')}","thumbnailWebp":"${u('200.webp')}","medium":"${u('450.jpg')}","mediumWebp":"${u('450.webp')}","large":"${u('900.jpg')}","largeWebp":"${u('900.webp')}"${huge}}`;
}

/** Frontal format names differ from photo ones (`mediumJpeg`, `largeJpg`); some frontals lack `largeWebp`. */
function frontalFormatsJson(base: string, id: number | string, lacks: boolean): string {
  const u = (file: string) => mediaFileUrl(base, id, file);
  const largeWebp = lacks ? '' : `,"largeWebp":"${u('900.webp')}"`;
  return `{"thumbnail":"${u('200.png')}","thumbnailWebp":"${u('200.webp')}","medium":"${u('450.png')}","mediumJpeg":"${u('450.jpg')}","mediumWebp":"${u('450.webp')}","largeJpg":"${u('900.jpg')}"${largeWebp},"huge":"${u('1500.png')}","hugeWebp":"${u('1500.webp')}"}`;
}

/** The target groups a media record states (its first draw); frontals state none. */
function drawTargetGroups(rng: Rng, kind: number): readonly string[] | undefined {
  if (kind === KIND_PHOTO) return rng.chance(0.7) ? ['public'] : ['public', 'pharmacist'];
  if (kind === KIND_LINK) return [rng.pick(TARGET_GROUPS)];
  return undefined;
}

/** `targetGroups` of media item `m` as its record states them (the media `targetGroup` filter reads them). */
export function mediaTargetGroups(seed: number, m: number, info: number): readonly string[] | undefined {
  return drawTargetGroups(details(seed, m).rng, mediaInfo.kind(info));
}

/** `"locales":..,"targetGroups":..,"photoType":..,"formats":..,"visibleSides":..` shared by media records and product photos. */
function photoFieldsJson(ds: MediaSource, m: number): string {
  const info = ds.mediaInfo[m]!;
  const { rng } = details(ds.seed, m);
  const targetGroups = JSON.stringify(drawTargetGroups(rng, KIND_PHOTO));
  const sides = JSON.stringify(rng.subset(VISIBLE_SIDES, 1, 2));
  return `"locales":${localeListJson(ds.mediaLocales[m]!)},"targetGroups":${targetGroups},"photoType":"${PHOTO_TYPES[mediaInfo.photoType(info)]}","formats":${photoFormatsJson(ds.assetBase, fileKey(ds, m), mediaInfo.lacksFormat(info) === 1)},"visibleSides":${sides}`;
}

export const metaJson = (ds: MediaSource, m: number) =>
  `"meta":{"createdAt":${ds.mediaCreatedAt[m]!},"updatedAt":${ds.mediaUpdatedAt[m]!}}`;
const organizationsJson = (ds: MediaSource, owner: number) =>
  `"organizations":${(ds.liveFragments ?? ds.fragments).photoOrganizations[ds.organization1[owner]! - 1]!}`;

/** A media record as media/stream returns it (and as product `links[]` embeds links), as JSON text. */
export function mediaJson(ds: MediaSource, m: number): string {
  const info = ds.mediaInfo[m]!;
  const id = m + 1;
  const products = `"products":${JSON.stringify(ds.mediaProducts(m))}`;
  const kind = mediaInfo.kind(info);
  if (kind === KIND_PHOTO)
    return `{"id":${id},"kind":"photo",${photoFieldsJson(ds, m)},${metaJson(ds, m)},${organizationsJson(ds, ds.mediaOwner(m))},${products}}`;
  if (kind === KIND_FRONTAL) {
    return `{"id":${id},"kind":"frontal","photoType":"${PHOTO_TYPES[mediaInfo.photoType(info)]}","formats":${frontalFormatsJson(ds.assetBase, fileKey(ds, m), mediaInfo.lacksFormat(info) === 1)},${metaJson(ds, m)},${products}}`;
  }
  const { rng } = details(ds.seed, m);
  // Only brochures are files (PDFs on the asset host); app, video and website links are pages.
  const linkType = linkTypeOf(m);
  const url =
    linkType === 'brochure'
      ? brochureUrl(ds.assetBase, fileKey(ds, m))
      : `https://www.catalog-sandbox.test/links/${id}`;
  return `{"id":${id},"kind":"link","linkType":"${linkType}","url":"${url}","locales":${localeListJson(ds.mediaLocales[m]!)},"targetGroups":${JSON.stringify(drawTargetGroups(rng, KIND_LINK))},${metaJson(ds, m)},${products}}`;
}

/** A product's `photos[]` entry (no id: the spec shows none; the URLs identify the image). */
export function productPhotoJson(ds: MediaSource, m: number, displayOrder: number): string {
  return `{${photoFieldsJson(ds, m)},"displayOrder":${displayOrder},${metaJson(ds, m)},${organizationsJson(ds, ds.mediaOwner(m))}}`;
}

export function productFrontalJson(ds: MediaSource, m: number, displayOrder: number): string {
  const info = ds.mediaInfo[m]!;
  return `{"photoType":"${PHOTO_TYPES[mediaInfo.photoType(info)]}","formats":${frontalFormatsJson(ds.assetBase, fileKey(ds, m), mediaInfo.lacksFormat(info) === 1)},"displayOrder":${displayOrder}}`;
}

/**
 * A product's `photos[]` entry as the live service sends it: with the media `id`,
 * and `displayOrder`, `locales`, `targetGroups`, `visibleSides`, `meta` each
 * missing from some photos.
 */
export function liveProductPhotoJson(ds: MediaSource, m: number, displayOrder: number): string {
  const info = ds.mediaInfo[m]!;
  const rng = rngFor(ds.seed, SALT.liveMedia, m);
  let s = `{"id":${m + 1},"photoType":"${PHOTO_TYPES[mediaInfo.photoType(info)]}"`;
  s += `,"formats":${photoFormatsJson(ds.assetBase, fileKey(ds, m), mediaInfo.lacksFormat(info) === 1)}`;
  if (rng.chance(0.7)) s += `,"displayOrder":${displayOrder}`;
  if (rng.chance(0.6)) s += `,"locales":${localeListJson(ds.mediaLocales[m]!)}`;
  if (rng.chance(0.6)) s += `,"targetGroups":${JSON.stringify(rng.subset(LIVE_TARGET_GROUPS, 1, 3))}`;
  if (rng.chance(0.5)) s += `,"visibleSides":${JSON.stringify(rng.subset(VISIBLE_SIDES, 1, 2))}`;
  if (rng.chance(0.6)) s += `,${metaJson(ds, m)}`;
  return `${s}}`;
}

/**
 * A live `frontals[]` entry: `id`, `type: "frontal"`, `displayOrder`, and the
 * format keys the live service uses beyond the spec's (`large`, `largePng`,
 * `hugePng`); a third also carry webp variants.
 */
export function liveProductFrontalJson(ds: MediaSource, m: number, displayOrder: number): string {
  const info = ds.mediaInfo[m]!;
  const rng = rngFor(ds.seed, SALT.liveMedia, m);
  const u = (file: string) => mediaFileUrl(ds.assetBase, fileKey(ds, m), file);
  const lacks = mediaInfo.lacksFormat(info) === 1;
  let formats = `"thumbnail":"${u('200.png')}","medium":"${u('450.png')}","mediumJpeg":"${u('450.jpg')}","large":"${u('900.png')}"`;
  if (!lacks) formats += `,"largePng":"${u('900-2.png')}"`;
  formats += `,"huge":"${u('1500.png')}"`;
  if (!lacks) formats += `,"hugePng":"${u('1500-2.png')}"`;
  if (rng.chance(0.33))
    formats += `,"thumbnailWebp":"${u('200.webp')}","mediumWebp":"${u('450.webp')}","largeWebp":"${u('900.webp')}"`;
  const groups = rng.chance(0.5) ? LIVE_TARGET_GROUPS : rng.subset(LIVE_TARGET_GROUPS, 1, 3);
  return (
    `{"id":${m + 1},"type":"frontal","photoType":"${PHOTO_TYPES[mediaInfo.photoType(info)]}","displayOrder":${displayOrder}` +
    `,"locales":${localeListJson(ds.mediaLocales[m]!)},"targetGroups":${JSON.stringify(groups)},"formats":{${formats}},${metaJson(ds, m)}}`
  );
}
