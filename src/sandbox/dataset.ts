// The sandbox's data: compact per-product and per-media columns (typed arrays)
// for what filters, sortings and touches need, the small reference tables as
// ready records, and builders that produce full records on demand. At 1M
// products this is a few tens of MB instead of several GB of JSON objects.
// Everything is a pure function of (seed, product count, options) except the
// timestamps `touch` moves forward while the sandbox runs.
import { DEFAULT_ASSET_BASE } from './asset-host.js';
import type { BulkImport } from './timeline.js';
import { GENERATION_EPOCH, SALT, layOutCreatedAt, timeBetween, updatedAfter } from './timeline.js';
import { type CorrectionEntry, type NewsEntry, generateCorrections, generateNews } from './generate-activity.js';
import {
  KIND_FRONTAL,
  KIND_LINK,
  KIND_PHOTO,
  drawMedia,
  mediaJson,
  productFrontalJson,
  productPhotoJson,
  mediaInfo as mediaInfoBits,
} from './generate-media.js';
import {
  MAX_PRODUCTS,
  type ProductDrawContext,
  type ProductFacts,
  drawProductFacts,
  productDrawContext,
  productIdOf,
  productIndexOf,
  productJson,
} from './generate-products.js';
import { JsonFragments } from './json-fragments.js';
import { type ReferenceData, generateReferenceData } from './generate-reference.js';
import { LiveFragments, liveProductJson } from './live-products.js';
import { DEFAULT_PROFILE, SANDBOX_PROFILES, type SandboxProfile, isSandboxProfile } from './profiles.js';
import { rngFor } from './random.js';

export const DEFAULT_PRODUCT_COUNT = 12_000;
export const DEFAULT_SEED = 1;

export interface DatasetOptions {
  /** Any integer; the same seed and options give the same data, byte for byte. */
  seed?: number;
  /** Number of products (default 12,000, so the 10000 result cap matters). */
  products?: number;
  /** Put this many products on one single createdAt instant (to test more than 10000 at one instant). */
  bulkInstant?: number;
  /** Where the straddling bulk import is centred in createdAt order (default: the 10000 cap). */
  resultWindow?: number;
  /** Which shapes to serve: `spec` (documented) or a live region's `au`, `be`, `fr`, `us` (default DEFAULT_PROFILE). */
  profile?: SandboxProfile;
  /**
   * Products not created yet (the highest ids): hidden at the start, they are what `add` creates
   * while a pipeline reads (default 0).
   */
  pending?: number;
}

const YEAR = 365 * 86_400;

export class Dataset {
  readonly seed: number;
  readonly productCount: number;
  readonly profile: SandboxProfile;
  readonly ref: ReferenceData;
  readonly bulkImports: BulkImport[];
  readonly corrections: CorrectionEntry[];
  readonly news: NewsEntry[];

  // Product columns, indexed by product index (id `P0000001` is index 0).
  readonly createdAt: Uint32Array;
  readonly updatedAt: Uint32Array;
  readonly statusTouchedAt: Uint32Array;
  /** 0 when the product has none. */
  readonly officialDeletionAt: Uint32Array;
  readonly status: Uint8Array;
  readonly deleted: Uint8Array;
  readonly hasCannabis: Uint8Array;
  readonly hasPublicCategory: Uint8Array;
  /** Locale masks (en=1, nl=2, fr=4, de=8) of the name, descriptions and leaflets. */
  readonly nameLocales: Uint8Array;
  readonly descriptionLocales: Uint8Array;
  readonly leafletLocales: Uint8Array;
  /** 0 when none. */
  readonly brand: Uint16Array;
  readonly organization1: Uint16Array;
  readonly organization2: Uint16Array;

  // Media columns, indexed by media index (media id = index + 1).
  /** Product i owns media [mediaStart[i], mediaStart[i + 1]). */
  readonly mediaStart: Uint32Array;
  readonly mediaInfo: Uint8Array;
  readonly mediaLocales: Uint8Array;
  readonly mediaCreatedAt: Uint32Array;
  readonly mediaUpdatedAt: Uint32Array;

  /** Bumped by every touch, so cached query results built before it are not reused. */
  version = 0;
  readonly #revisions = new Map<number, number>();
  /** Products the admin route `hide` took out of every result (until `reveal`). */
  readonly hidden = new Set<number>();
  /** Media items taken out of the `available` set (expireMedia), over the drawn availability (live-filters.ts). */
  readonly expiredMedia = new Set<number>();
  readonly #mediaRevisions = new Map<number, number>();
  /** Status and deleted flag set by the admin route `status`, over the drawn ones. */
  readonly #overrides = new Map<number, { status: number; deleted: boolean; replacement: number }>();
  readonly #drawContext: ProductDrawContext;
  /** Pre-serialized reference objects that product records embed. */
  readonly fragments: JsonFragments;
  /** Their live-profile forms; undefined in the spec profile. */
  readonly liveFragments: LiveFragments | undefined;
  /**
   * Where media URLs point (records are built when served, so this applies from the next answer):
   * `startSandbox` sets it to its asset host's URL (sandbox/asset-host.ts).
   */
  assetBase = DEFAULT_ASSET_BASE;

  constructor(options: DatasetOptions = {}) {
    const { seed, count, profile } = checkedOptions(options);
    this.seed = seed;
    this.productCount = count;
    this.profile = profile;
    this.ref = generateReferenceData(seed, count);
    this.#drawContext = productDrawContext(this.ref, profile);
    this.fragments = new JsonFragments(this.ref);
    this.liveFragments = profile === 'spec' ? undefined : new LiveFragments(this.ref, this.fragments, seed, profile);

    const pending = options.pending ?? 0;
    if (!Number.isInteger(pending) || pending < 0 || pending >= count)
      throw new RangeError(`pending must be an integer from 0 to ${count - 1}, got ${pending}`);
    for (let i = count - pending; i < count; i++) this.hidden.add(i);
    const layout = layOutCreatedAt(seed, count, options);
    this.createdAt = layout.createdAt;
    this.bulkImports = layout.bulkImports;
    this.updatedAt = new Uint32Array(count);
    this.statusTouchedAt = new Uint32Array(count);
    this.officialDeletionAt = new Uint32Array(count);
    this.status = new Uint8Array(count);
    this.deleted = new Uint8Array(count);
    this.hasCannabis = new Uint8Array(count);
    this.hasPublicCategory = new Uint8Array(count);
    this.nameLocales = new Uint8Array(count);
    this.descriptionLocales = new Uint8Array(count);
    this.leafletLocales = new Uint8Array(count);
    this.brand = new Uint16Array(count);
    this.organization1 = new Uint16Array(count);
    this.organization2 = new Uint16Array(count);
    this.mediaStart = new Uint32Array(count + 1);
    // Own media counts per product: photos (3 bits), frontals (2), links (1).
    const mediaCounts = new Uint8Array(count);
    let mediaCount = 0;
    for (let i = 0; i < count; i++) {
      const f = this.productFacts(i);
      const created = this.createdAt[i]!;
      const rng = rngFor(seed, SALT.updatedAt, i);
      const updated = updatedAfter(rng, created);
      this.updatedAt[i] = updated;
      this.statusTouchedAt[i] = timeBetween(rng, created, updated);
      this.officialDeletionAt[i] = officialDeletion(f, created);
      this.status[i] = f.status;
      this.deleted[i] = f.deleted ? 1 : 0;
      this.hasCannabis[i] = f.cannabis ? 1 : 0;
      this.hasPublicCategory[i] = f.publicCategories.length ? 1 : 0;
      this.nameLocales[i] = f.nameMask;
      this.descriptionLocales[i] = f.descriptionMask;
      this.leafletLocales[i] = f.leafletMask;
      this.brand[i] = f.brand;
      this.organization1[i] = f.organizations[0]!;
      this.organization2[i] = f.organizations[1] ?? 0;
      this.mediaStart[i] = mediaCount;
      mediaCounts[i] = f.photos | (f.frontals << 3) | (f.links << 5);
      mediaCount += f.photos + f.frontals + f.links;
    }
    this.mediaStart[count] = mediaCount;
    const media = drawMediaColumns(seed, profile, this.createdAt, this.mediaStart, mediaCounts);
    this.mediaInfo = media.info;
    this.mediaLocales = media.locales;
    this.mediaCreatedAt = media.createdAt;
    this.mediaUpdatedAt = media.updatedAt;
    this.corrections = generateCorrections(seed, this.createdAt, this.ref, profile);
    this.news = generateNews(seed, count, this.ref);
  }

  get mediaCount(): number {
    return this.mediaInfo.length;
  }

  productId(index: number): string {
    return productIdOf(index);
  }

  /** Index of a product id, -1 when there is no such product. */
  productIndex(id: string): number {
    return productIndexOf(id, this.productCount);
  }

  /** The filterable facts of a product, rebuilt from the seed (about a microsecond). */
  productFacts(index: number): ProductFacts {
    const f = drawProductFacts(this.seed, index, this.productCount, this.#drawContext);
    const override = this.#overrides.size > 0 ? this.#overrides.get(index) : undefined;
    if (override) {
      f.status = override.status;
      f.deleted = override.deleted;
      f.replacement = override.replacement;
    }
    return f;
  }

  /** The product record as JSON text, exactly as products/query and products/stream serve it. */
  productJson(index: number): string {
    return this.profile === 'spec' ? productJson(this, index) : liveProductJson(this, index);
  }

  /** The product record as an object (parsed from the served text, so the two never differ). */
  product(index: number): Record<string, unknown> {
    return JSON.parse(this.productJson(index)) as Record<string, unknown>;
  }

  /** The media record of media index m (id m + 1) as JSON text, as media/stream serves it. */
  mediaJson(m: number): string {
    return mediaJson(this, m);
  }

  mediaRecord(m: number): Record<string, unknown> {
    return JSON.parse(mediaJson(this, m)) as Record<string, unknown>;
  }

  productPhotoJson(m: number, displayOrder: number): string {
    return productPhotoJson(this, m, displayOrder);
  }

  productFrontalJson(m: number, displayOrder: number): string {
    return productFrontalJson(this, m, displayOrder);
  }

  /** The product owning media m (binary search over mediaStart). */
  mediaOwner(m: number): number {
    let lo = 0;
    let hi = this.productCount - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.mediaStart[mid]! <= m) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** Indexes of the products media m is linked to: its owner and the next `share` products. */
  mediaProductIndexes(m: number): number[] {
    const owner = this.mediaOwner(m);
    const last = Math.min(this.productCount - 1, owner + mediaInfoBits.share(this.mediaInfo[m]!));
    const out: number[] = [];
    for (let p = owner; p <= last; p++) out.push(p);
    return out;
  }

  mediaProducts(m: number): string[] {
    return this.mediaProductIndexes(m).map(productIdOf);
  }

  /** Media of a product: its own, then lifestyle photos and links shared by the one or two products before it. */
  productMedia(index: number): { photos: number[]; frontals: number[]; links: number[] } {
    const photos: number[] = [];
    const frontals: number[] = [];
    const links: number[] = [];
    for (let d = 0; d <= 2 && index - d >= 0; d++) {
      const owner = index - d;
      for (let m = this.mediaStart[owner]!; m < this.mediaStart[owner + 1]!; m++) {
        const info = this.mediaInfo[m]!;
        if (d > 0 && mediaInfoBits.share(info) < d) continue;
        const kind = mediaInfoBits.kind(info);
        (kind === KIND_PHOTO ? photos : kind === KIND_FRONTAL ? frontals : links).push(m);
      }
    }
    return { photos, frontals, links };
  }

  /** How many times a product was touched (touches also change its public price, so a change is visible). */
  revisionOf(index: number): number {
    return this.#revisions.get(index) ?? 0;
  }

  /** Moves updatedAt of these products (never before createdAt) to `at`. */
  touchProducts(indexes: readonly number[], at: number): void {
    for (const i of indexes) {
      this.updatedAt[i] = Math.max(at, this.createdAt[i]!);
      this.#revisions.set(i, this.revisionOf(i) + 1);
    }
    this.version++;
  }

  /** Takes these products out of every result: they disappear from the catalog (not an API event). */
  hideProducts(indexes: readonly number[]): void {
    for (const i of indexes) this.hidden.add(i);
    this.version++;
  }

  /** Brings hidden products back, as new ones: updatedAt moves to `at`, so an incremental run sees them. */
  revealProducts(indexes: readonly number[], at: number): void {
    for (const i of indexes) this.hidden.delete(i);
    this.touchProducts(indexes, at);
  }

  /** Hidden products come in as created at `at`: createdAt and updatedAt move there. */
  createProducts(indexes: readonly number[], at: number): void {
    for (const i of indexes) {
      this.hidden.delete(i);
      this.createdAt[i] = Math.max(at, this.createdAt[i]!);
    }
    this.touchProducts(indexes, at);
  }

  /** Sets status (and optionally the deleted flag); updatedAt and statusTouchedAt move to `at`. */
  setProductStatus(indexes: readonly number[], status: number, deleted: boolean | undefined, at: number): void {
    for (const i of indexes) {
      const f = this.productFacts(i);
      // Only replaced products name a replacement (the validator holds the sandbox to it).
      const replacement = status !== 2 ? -1 : f.replacement >= 0 ? f.replacement : (i + 1) % this.productCount;
      this.#overrides.set(i, { status, deleted: deleted ?? f.deleted, replacement });
      this.status[i] = status;
      this.deleted[i] = (deleted ?? f.deleted) ? 1 : 0;
      this.statusTouchedAt[i] = Math.max(at, this.createdAt[i]!);
      this.updatedAt[i] = Math.max(at, this.createdAt[i]!);
    }
    this.version++;
  }

  touchMedia(indexes: readonly number[], at: number): void {
    for (const m of indexes) this.mediaUpdatedAt[m] = Math.max(at, this.mediaCreatedAt[m]!);
    this.version++;
  }

  /** How many times media item m's files were replaced (generate-media.ts `fileKey`). */
  mediaRevision(m: number): number {
    return this.#mediaRevisions.get(m) ?? 0;
  }

  /**
   * New files for these media items (a new upload: new URLs, the old ones stay served), updatedAt
   * moved to `at`; the products they are linked to show the new URLs and move to `at` as well.
   */
  replaceMedia(indexes: readonly number[], at: number): void {
    for (const m of indexes) this.#mediaRevisions.set(m, this.mediaRevision(m) + 1);
    this.touchMedia(indexes, at);
    this.touchProducts([...new Set(indexes.flatMap((m) => this.mediaProductIndexes(m)))], at);
  }

  /**
   * These media items leave the `available` set with no timestamp moving, as one does on the live
   * service when its `availableUntil` passes: only a full re-list of the available set notices.
   */
  expireMedia(indexes: readonly number[]): void {
    for (const m of indexes) this.expiredMedia.add(m);
    this.version++;
  }
}

/** Inactive and replaced products mostly have an official end date; a few others have a future one. */
function officialDeletion(f: ProductFacts, createdAt: number): number {
  const ended = f.status === 1 || f.status === 2;
  const p = ended ? 0.7 : 0.05;
  if (f.deletionDraw >= p) return 0;
  const frac = f.deletionDraw / p;
  const from = ended ? createdAt : GENERATION_EPOCH;
  const t = Math.floor(from + frac * (GENERATION_EPOCH + 2 * YEAR - from));
  return t - (t % 86_400);
}

/** The constructor's options with their defaults, or a RangeError naming the one out of range. */
function checkedOptions(options: DatasetOptions): { seed: number; count: number; profile: SandboxProfile } {
  const seed = options.seed ?? DEFAULT_SEED;
  const count = options.products ?? DEFAULT_PRODUCT_COUNT;
  if (!Number.isSafeInteger(seed)) throw new RangeError(`seed must be an integer, got ${seed}`);
  if (!Number.isInteger(count) || count < 1 || count > MAX_PRODUCTS)
    throw new RangeError(`products must be an integer from 1 to ${MAX_PRODUCTS}, got ${count}`);
  const profile = options.profile ?? DEFAULT_PROFILE;
  if (!isSandboxProfile(profile))
    throw new RangeError(`profile must be one of ${SANDBOX_PROFILES.join(', ')}, got ${String(profile)}`);
  return { seed, count, profile };
}

/**
 * The media columns: product i owns media [mediaStart[i], mediaStart[i + 1]), its photos first,
 * then frontals, then links (counts packed in `mediaCounts` as photos 3 bits, frontals 2, links 1).
 */
function drawMediaColumns(
  seed: number,
  profile: SandboxProfile,
  createdAt: Uint32Array,
  mediaStart: Uint32Array,
  mediaCounts: Uint8Array,
): { info: Uint8Array; locales: Uint8Array; createdAt: Uint32Array; updatedAt: Uint32Array } {
  const total = mediaStart[mediaCounts.length]!;
  const out = {
    info: new Uint8Array(total),
    locales: new Uint8Array(total),
    createdAt: new Uint32Array(total),
    updatedAt: new Uint32Array(total),
  };
  for (let i = 0; i < mediaCounts.length; i++) {
    const c = mediaCounts[i]!;
    const photos = c & 7;
    const frontals = (c >> 3) & 3;
    for (let m = mediaStart[i]!, k = 0; m < mediaStart[i + 1]!; m++, k++) {
      const kind = k < photos ? KIND_PHOTO : k < photos + frontals ? KIND_FRONTAL : KIND_LINK;
      const d = drawMedia(seed, m, kind, createdAt[i]!, profile);
      out.info[m] = d.info;
      out.locales[m] = d.locales;
      out.createdAt[m] = d.createdAt;
      out.updatedAt[m] = d.updatedAt;
    }
  }
  return out;
}
