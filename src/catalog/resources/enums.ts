// Enumerations of the spec (§2, §3, §4): the values records may carry and the
// values filters accept. Filters sometimes accept fewer (product status).
import { z } from 'zod';

export const ProductStatus = z.enum(['active', 'inactive', 'replaced', 'no_selection']);
/** The products `status` filter does not accept `no_selection`. */
export const ProductStatusFilterValue = z.enum(['active', 'replaced', 'inactive']);
export const YesNoUnknown = z.enum(['yes', 'no', 'unknown']);
export const Narcotic = z.enum(['yes', 'no', 'unknown', 'assimilated']);
export const ScheduleCode = z.enum(['NS', 'S2', 'S3', 'S4', 'S4D', 'S5', 'S6', 'S7', 'S8', 'S9', 'S10']);
export const ArtgCategory = z.enum([
  'assessed_listed',
  'listed',
  'listed_export_only',
  'registered',
  'registered_provisional',
  'registered_with_provisional',
]);
export const Conservation = z.enum(['room', 'refrigerator', 'fresh', 'frozen']);
export const AllowedSpeciesCode = z.enum(['human', 'veterinary', 'surface_maintenance', 'phytopharmacy']);
export const CatalogCategoryType = z.enum(['medicine', 'veterinary_medicine', 'non_medical']);
export const OrganizationType = z.enum(['supplier', 'marketing', 'medical_professional', 'other']);
export const PhotoType = z.enum(['packshot', 'productshot', 'lifestyle_image', 'pillshot']);
export const FrontalPhotoType = z.enum(['packshot', 'productshot']);
export const LeafletType = z.enum(['pil', 'spc']);
/**
 * Correction statuses: the spec lists `open, in_progress, solved, closed` for records and
 * `open, in_progress, handled` for the filter; the live service sends values of both lists.
 */
export const CorrectionStatus = z.enum(['open', 'in_progress', 'handled', 'solved', 'closed']);
/**
 * Correction types: the spec shows none; observed on the live service: missing_photo,
 * wrong_description, wrong_photo; the sandbox's spec profile serves the others.
 */
export const CorrectionType = z.enum([
  'missing_photo',
  'wrong_description',
  'wrong_photo',
  'wrong_name',
  'wrong_price',
  'wrong_ean',
  'missing_information',
  'other',
]);
export const CorrectionStatusFilterValue = z.enum(['open', 'in_progress', 'handled']);
export const NewsType = z.enum(['product', 'organization', 'public_category', 'brand']);
export const CannabisForm = z.enum([
  'oil',
  'flower',
  'capsule',
  'spray',
  'resin',
  'tablet',
  'wafer',
  'gummy',
  'lozenge',
]);
export const CannabisCategory = z.enum(['full_spectrum', 'broad_spectrum', 'isolate']);
export const CultivarType = z.enum(['indica', 'sativa', 'hybrid']);
export const MinorCannabinoid = z.enum([
  'CBG',
  'CBN',
  'CBC',
  'THCV',
  'CBDV',
  'CBDA',
  'CBGA',
  'THCA',
  'CBL',
  'CBT',
  'Δ8-THC',
]);
export const Terpene = z.enum([
  'Myrcene',
  'Limonene',
  'β-Caryophyllene',
  'α-Pinene',
  'β-Pinene',
  'Linalool',
  'Humulene',
  'Terpinolene',
  'Ocimene',
  'Bisabolol',
  'Camphene',
  'Borneol',
  'Geraniol',
  'Nerolidol',
  'Valencene',
  'Fenchol',
  'Guaiol',
  'Isopulegol',
  'Phytol',
  'Sabinene',
  'α-Terpineol',
  'p-Cymene',
  'Eucalyptol (1,8-Cineole)',
]);

/**
 * Target groups (spec: "not shown" beyond public and pharmacist). The eight are the vendor's field
 * glossary and the live service's; `professional` is the sandbox's spec profile.
 */
export const TargetGroup = z.enum([
  'public',
  'pharmacist',
  'doctor',
  'homecare',
  'hospital',
  'nurse',
  'physiotherapist',
  'webshop',
  'professional',
]);
/** Photo visibleSides (spec: not shown; observed on the live service). */
export const VisibleSide = z.enum(['front', 'left', 'right', 'back', 'bottom', 'top']);
/** Units of weightWithUnit/widthWithUnit/lengthWithUnit/depthWithUnit (spec: a string; observed). */
export const MeasureUnit = z.enum(['kg', 'g', 'cm', 'mm']);
/** `descriptions[].descriptionTag` (not in the spec; observed). */
export const DescriptionTag = z.enum(['user_generated', 'system_generated']);
/**
 * Description types (spec: not shown). Observed on the live service, plus `general`, the sandbox's
 * spec profile's name for a full description.
 */
export const DescriptionType = z.enum([
  'full_description',
  'faq',
  'measurements',
  'legal_text',
  'indication',
  'contra_indication',
  'usage',
  'usage_extended',
  'composition',
  'properties',
  'side_effects',
  'nutritional_value',
  'usage_type',
  'pregnancy_description',
  'pregnancy_description_extended',
  'breastfeeding_description',
  'breastfeeding_description_extended',
  'interactions',
  'warnings',
  'keywords',
  'general',
]);

/** Photo format names (spec §2.7): size x encoding. */
export const PHOTO_FORMATS = [
  'thumbnail',
  'thumbnailWebp',
  'medium',
  'mediumWebp',
  'large',
  'largeWebp',
  'huge',
  'hugeWebp',
] as const;
/**
 * Frontal format names differ from the photo ones (`largeJpg`, `mediumJpeg`); the live service
 * also sends `medium`, `large`, `largePng`, `huge`, `hugePng` (PNG frontals: `large` and `huge`
 * hold a PNG there, see select-media-format).
 */
export const FRONTAL_FORMATS = [
  'thumbnail',
  'thumbnailWebp',
  'medium',
  'mediumJpeg',
  'mediumWebp',
  'large',
  'largeJpg',
  'largePng',
  'largeWebp',
  'huge',
  'hugePng',
  'hugeWebp',
] as const;
