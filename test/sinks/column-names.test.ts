// Column naming (issue 25, analyst-friendly columns): the snake_case rules, pinned name by name,
// on the names the catalog's records give and on the acronyms a user's own fields may have.
import { describe, expect, it } from 'vitest';
import { columnNamer, snakeCase } from '../../src/sinks/shared/column-names.js';

describe('snakeCase', () => {
  it.each([
    ['seoName_en', 'seo_name_en'],
    ['meta_updatedAt', 'meta_updated_at'],
    ['meta_createdAt', 'meta_created_at'],
    ['cannabisData_thcPercentage', 'cannabis_data_thc_percentage'],
    ['conservationMin_celsius', 'conservation_min_celsius'],
    ['gs1Category_active', 'gs1_category_active'],
    ['eanGtin13', 'ean_gtin13'],
    ['eanGtin14', 'ean_gtin14'],
    ['cipOrAcl7', 'cip_or_acl7'],
    ['hsCode', 'hs_code'],
    ['atcCode', 'atc_code'],
    ['upc12', 'upc12'],
    ['gtin14Code', 'gtin14_code'],
    ['URLs', 'urls'],
    ['photoURLs', 'photo_urls'],
    ['URLList', 'url_list'],
    ['HTMLParser', 'html_parser'],
    ['productID', 'product_id'],
    ['ID', 'id'],
    ['name_fr-BE', 'name_fr_be'],
    ['_extra', '_extra'],
    ['a__b', 'a__b'],
    ['weightWithUnit_value', 'weight_with_unit_value'],
  ])('%s -> %s', (name, snake) => {
    expect(snakeCase(name)).toBe(snake);
  });

  it('is idempotent: a snake_case name maps to itself', () => {
    for (const name of ['seoName_en', 'meta_updatedAt', 'URLList', 'photoURLs', 'cipOrAcl7', 'name_fr-BE'])
      expect(snakeCase(snakeCase(name))).toBe(snakeCase(name));
  });

  it('as-is leaves names alone', () => {
    expect(columnNamer('as-is')('meta_updatedAt')).toBe('meta_updatedAt');
    expect(columnNamer(undefined)('seoName_en')).toBe('seoName_en');
    expect(columnNamer('snake_case')('seoName_en')).toBe('seo_name_en');
  });
});
