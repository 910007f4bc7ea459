// Photos, frontal photos and media records (spec §2.7). A media record from
// media/stream and a product's `links[]` share one shape; the spec shows only the
// photo fields, so the rest is optional and extra fields pass through.
import { z } from 'zod';
import { Id, LocalizedOrText, RecordMeta } from '../primitives.js';
import { FRONTAL_FORMATS, FrontalPhotoType, PHOTO_FORMATS, PhotoType, TargetGroup, VisibleSide } from './enums.js';

const url = z.string();

export const PhotoFormats = z.looseObject(
  Object.fromEntries(PHOTO_FORMATS.map((f) => [f, url.optional()])) as Record<
    (typeof PHOTO_FORMATS)[number],
    z.ZodOptional<z.ZodString>
  >,
);
export const FrontalFormats = z.looseObject(
  Object.fromEntries(FRONTAL_FORMATS.map((f) => [f, url.optional()])) as Record<
    (typeof FRONTAL_FORMATS)[number],
    z.ZodOptional<z.ZodString>
  >,
);

export const MediaOrganization = z.looseObject({
  id: z.int().optional(),
  name: LocalizedOrText,
});

/** The live service gives photos an `id` and may leave out displayOrder, locales, targetGroups and meta. */
export const Photo = z.looseObject({
  id: Id.optional(),
  locales: z.array(z.string()).optional(),
  targetGroups: z.array(TargetGroup).optional(),
  photoType: PhotoType.optional(),
  formats: PhotoFormats.optional(),
  visibleSides: z.array(VisibleSide).optional(),
  displayOrder: z.int().positive().optional(),
  meta: RecordMeta.optional(),
  organizations: z.array(MediaOrganization).optional(),
});
export type Photo = z.infer<typeof Photo>;

/** Live frontals also carry `id`, `type: "frontal"`, locales, targetGroups and meta. */
export const FrontalPhoto = z.looseObject({
  id: Id.optional(),
  type: z.literal('frontal').optional(),
  photoType: FrontalPhotoType.optional(),
  formats: FrontalFormats.optional(),
  displayOrder: z.int().positive().optional(),
  locales: z.array(z.string()).optional(),
  targetGroups: z.array(TargetGroup).optional(),
  meta: RecordMeta.optional(),
});
export type FrontalPhoto = z.infer<typeof FrontalPhoto>;

/**
 * A media record (media/stream, product `links[]`). Beyond the photo fields the
 * spec shows nothing; our sandbox adds `id`, `kind` (`photo`/`frontal`/`link`),
 * `url` for links and `products` (the catalog IDs it is linked to).
 */
export const MediaRecord = Photo.extend({
  id: z.union([z.int(), z.string()]).optional(),
  /** `frontal` on a frontal photo from media/stream (live service). */
  type: z.literal('frontal').optional(),
  /** A frontal from media/stream has the frontal format names (largeJpg, largePng...). */
  formats: z.looseObject({ ...PhotoFormats.shape, ...FrontalFormats.shape }).optional(),
  kind: z.string().optional(),
  url: z.string().optional(),
  /** A link's type (`app`, `brochure`, `video`, `website`); only a brochure's URL is a file (a PDF). */
  linkType: z.string().optional(),
  products: z.array(z.string()).optional(),
});
export type MediaRecord = z.infer<typeof MediaRecord>;
