// Resource schemas by name, so stages can pick the schema of their source.
import type { z } from 'zod';
import { MediaRecord } from './media.js';
import { CatalogCategory, Product } from './product.js';
import { Brand, Correction, NewsItem, Organization } from './reference.js';
import {
  ActiveIngredientRecord,
  AtcCategoryRecord,
  Color,
  DietaryRestriction,
  OspCategoryRecord,
  ProductFamilyRecord,
  PublicCategoryRecord,
} from './taxonomy.js';

export const resourceSchemas = {
  product: Product,
  media: MediaRecord,
  organization: Organization,
  brand: Brand,
  correction: Correction,
  'news-item': NewsItem,
  'catalog-category': CatalogCategory,
  'public-category': PublicCategoryRecord,
  'dietary-restriction': DietaryRestriction,
  color: Color,
  'active-ingredient': ActiveIngredientRecord,
  'product-family': ProductFamilyRecord,
  'atc-category': AtcCategoryRecord,
  'osp-category': OspCategoryRecord,
} as const satisfies Record<string, z.ZodType>;

export type ResourceName = keyof typeof resourceSchemas;
export const RESOURCE_NAMES = Object.keys(resourceSchemas) as ResourceName[];

export * from './enums.js';
export * from './media.js';
export * from './product.js';
export * from './reference.js';
export * from './taxonomy.js';
