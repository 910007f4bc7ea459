// Photos, frontal photos and media records (spec §2.7). A media record from
// media/stream and a product's `links[]` share one shape; the spec shows only the
// photo fields, so the rest is optional and extra fields pass through.
import { z } from 'zod';
import { Localized, RecordMeta } from '../primitives.js';
import { FRONTAL_FORMATS, FrontalPhotoType, PHOTO_FORMATS, PhotoType } from './enums.js';

const url = z.string();

export const PhotoFormats = z.looseObject(
  Object.fromEntries(PHOTO_FORMATS.map((f) => [f, url.optional()])) as Record<(typeof PHOTO_FORMATS)[number], z.ZodOptional<z.ZodString>>,
);
export const FrontalFormats = z.looseObject(
  Object.fromEntries(FRONTAL_FORMATS.map((f) => [f, url.optional()])) as Record<(typeof FRONTAL_FORMATS)[number], z.ZodOptional<z.ZodString>>,
);

export const MediaOrganization = z.looseObject({
  id: z.int().optional(),
  name: Localized,
});

export const Photo = z.looseObject({
  locales: z.array(z.string()).optional(),
  targetGroups: z.array(z.string()).optional(),
  photoType: PhotoType.optional(),
  formats: PhotoFormats.optional(),
  visibleSides: z.array(z.string()).optional(),
  displayOrder: z.int().positive().optional(),
  meta: RecordMeta.optional(),
  organizations: z.array(MediaOrganization).optional(),
});
export type Photo = z.infer<typeof Photo>;

export const FrontalPhoto = z.looseObject({
  photoType: FrontalPhotoType.optional(),
  formats: FrontalFormats.optional(),
  displayOrder: z.int().positive().optional(),
});
export type FrontalPhoto = z.infer<typeof FrontalPhoto>;

/**
 * A media record (media/stream, product `links[]`). Beyond the photo fields the
 * spec shows nothing; our sandbox adds `id`, `kind` (`photo`/`frontal`/`link`),
 * `url` for links and `products` (the catalog IDs it is linked to).
 */
export const MediaRecord = Photo.extend({
  id: z.union([z.int(), z.string()]).optional(),
  kind: z.string().optional(),
  url: z.string().optional(),
  products: z.array(z.string()).optional(),
});
export type MediaRecord = z.infer<typeof MediaRecord>;
