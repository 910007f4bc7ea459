import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { originOf, setOrigin } from '../../src/core/origin.js';
import { selectMediaFormatStage } from '../../src/transforms/index.js';
import { selectMediaFormat } from '../../src/pipeline/code-api.js';
import { liveShapes } from '../helpers/live-shapes.js';
import { context, fixture, run } from './support.js';

const products = () => fixture<any[]>('products.json');
const columns = (r: any) => ({ photo: [r.photo_url, r.photo_format], frontal: [r.frontal_url, r.frontal_format] });

describe('select-media-format', () => {
  it('takes the first photo by displayOrder and the first preferred format it has', async () => {
    const out = await run(products(), selectMediaFormat({ formats: ['largeWebp', 'large'] }, context()));
    // P1: photo 1 (displayOrder 1, listed second) has only `large`: photo order wins over format preference
    expect(columns(out[0]).photo).toEqual(['https://img/p1/1-large.jpg', 'large']);
    // frontal without a webp large: `large` matches the frontal's largeJpg, and the column says which preference won
    expect(columns(out[0]).frontal).toEqual(['https://img/p1/f1-large.jpg', 'large']);
    // P2: no photos, no frontals at all
    expect(columns(out[1])).toEqual({ photo: [null, null], frontal: [null, null] });
    // P3: only thumbnails: nothing preferred; frontal displayOrder 2 is the only one with a large
    expect(columns(out[2])).toEqual({ photo: [null, null], frontal: ['https://img/p3/f2-large.webp', 'largeWebp'] });
    // P4: a photo without displayOrder comes after numbered ones; frontals: []
    expect(columns(out[3])).toEqual({ photo: ['https://img/p4/3-large.jpg', 'large'], frontal: [null, null] });
  });

  it('resolves size + encoding across both naming schemes', async () => {
    const medium = await run(products(), selectMediaFormat({ formats: ['medium'] }, context()));
    expect(columns(medium[0])).toEqual({
      photo: ['https://img/p1/1-medium.jpg', 'medium'],
      frontal: ['https://img/p1/f1-medium.jpg', 'medium'],
    });
    expect(columns(medium[2]).frontal).toEqual(['https://img/p3/f1-medium.jpg', 'medium']);
    const jpeg = await run(products(), selectMediaFormat({ formats: ['largeJpeg'], from: ['frontals'] }, context()));
    expect(columns(jpeg[2]).frontal).toEqual(['https://img/p3/f2-large.jpg', 'largeJpeg']);
    expect(jpeg[0]).not.toHaveProperty('photo_url');
  });

  it('falls back to the nearest available format when asked, naming the key it found', async () => {
    const out = await run(
      products(),
      selectMediaFormat({ formats: ['largeWebp'], fallback: 'any', from: ['photos'] }, context()),
    );
    // P1 has largeWebp on photo 2 (no fallback needed even though photo 1 comes first)
    expect(columns(out[0]).photo).toEqual(['https://img/p1/2-large.webp', 'largeWebp']);
    // P3 only has thumbnails: the nearest size that exists, in the same encoding first
    expect(columns(out[2]).photo).toEqual(['https://img/p3/thumb.webp', 'thumbnailWebp']);
    const none = await run(products(), selectMediaFormat({ formats: ['largeWebp'], from: ['photos'] }, context()));
    expect(columns(none[2]).photo).toEqual([null, null]);
  });

  it('filters photos by type, locale and target group; photos without locales suit all', async () => {
    const packshot = await run(products(), selectMediaFormat({ photoType: ['packshot'], from: ['photos'] }, context()));
    expect(columns(packshot[0]).photo).toEqual(['https://img/p1/2-large.webp', 'largeWebp']);
    const fr = await run(products(), selectMediaFormat({ locales: ['fr'], from: ['photos'] }, context()));
    expect(columns(fr[0]).photo).toEqual([null, null]);
    // P4's photo has `locales: []`: suits every locale
    expect(columns(fr[3]).photo).toEqual(['https://img/p4/3-large.jpg', 'large']);
    const pharmacist = await run(
      products(),
      selectMediaFormat({ targetGroups: ['pharmacist'], from: ['photos'] }, context()),
    );
    expect(columns(pharmacist[0]).photo).toEqual(['https://img/p1/2-large.webp', 'largeWebp']);
    const frontal = await run(
      products(),
      selectMediaFormat(
        { frontalPhotoType: ['productshot'], formats: ['medium', 'large'], from: ['frontals'] },
        context(),
      ),
    );
    expect(columns(frontal[2]).frontal).toEqual(['https://img/p3/f2-large.jpg', 'large']);
  });

  it('lists every suitable photo in displayOrder with select: all', async () => {
    const out = await run(products(), selectMediaFormat({ select: 'all', formats: ['largeWebp', 'large'] }, context()));
    expect(out[0]).toMatchObject({
      photo_urls: ['https://img/p1/1-large.jpg', 'https://img/p1/2-large.webp'],
      photo_formats: ['large', 'largeWebp'],
      frontal_urls: ['https://img/p1/f1-large.jpg'],
      frontal_formats: ['large'],
    });
    expect(out[1]).toMatchObject({ photo_urls: [], photo_formats: [], frontal_urls: [], frontal_formats: [] });
    expect(out[3].photo_urls).toEqual(['https://img/p4/3-large.jpg', 'https://img/p4/nodisplay.webp']);
  });

  it('puts url and format on media-stream records; links keep their url', async () => {
    const media = fixture<any[]>('media.json');
    const out = await run(
      media,
      selectMediaFormat(
        { formats: ['largeWebp', 'large'], keepOriginal: false },
        context({ source: { type: 'media.stream', resource: 'media' } }),
      ),
    );
    expect(out.map((m) => [m.id, m.url, m.format])).toEqual([
      [7001, 'https://img/m/7001-large.webp', 'largeWebp'],
      [7002, 'https://img/m/7002-large.jpg', 'large'],
      [7003, 'https://video.example/7003', null],
      [7004, null, null],
    ]);
    expect(out[0]).not.toHaveProperty('formats');
  });

  it('drops photos and frontals unless kept, keeps the origin, leaves the input alone', async () => {
    const input = products().map((p, i) => setOrigin(p, { endpoint: 'products.query', page: 1, index: i }));
    const [p1] = await run(input, selectMediaFormat({ keepOriginal: false }, context()));
    expect(p1).not.toHaveProperty('photos');
    expect(p1).not.toHaveProperty('frontals');
    expect(originOf(p1)).toEqual({ endpoint: 'products.query', page: 1, index: 0 });
    expect(input[0].photos).toHaveLength(2);
    const [kept] = await run(input, selectMediaFormat({ photosColumn: 'image' }, context()));
    expect(kept.photos).toBe(input[0].photos);
    expect(kept.image_url).toBe('https://img/p1/1-large.jpg');
  });

  it('knows the format names and refuses other resources', () => {
    expect(
      selectMediaFormatStage.options.safeParse({ formats: ['largeWebp', 'hugeJpg', 'mediumJpeg', 'thumbnail'] })
        .success,
    ).toBe(true);
    expect(selectMediaFormatStage.options.safeParse({ formats: ['big'] }).success).toBe(false);
    expect(selectMediaFormatStage.options.safeParse({ formats: [] }).success).toBe(false);
    expect(() => selectMediaFormat({ resource: 'brand' }, context())).toThrow(ConfigError);
  });

  describe('live frontals (png/jpeg/webp variants, unsuffixed keys holding PNGs)', () => {
    const s = liveShapes();
    const product = (frontals: object[]) => ({
      id: 'L1',
      status: 'active',
      meta: { createdAt: 1, updatedAt: 2 },
      frontals,
      photos: s.product_au.photos,
    });
    const pick = async (options: Parameters<typeof selectMediaFormat>[0], frontals: object[] = [s.frontal_be]) => {
      const [out] = await run([product(frontals)], selectMediaFormat({ from: ['frontals'], ...options }, context()));
      return [out.frontal_url, out.frontal_format];
    };

    it('defaults: webp, then jpeg, then png of the large size', async () => {
      // frontal_be has no webp and no explicit jpeg at large: the unsuffixed large (a PNG) is taken
      expect(await pick({})).toEqual(['https://assets.example/f/1/l.png', 'large']);
      const withJpeg = {
        ...s.frontal_be,
        formats: { ...s.frontal_be.formats, largeJpg: 'https://assets.example/f/1/l.jpg' },
      };
      expect(await pick({}, [withJpeg])).toEqual(['https://assets.example/f/1/l.jpg', 'large']);
      const withWebp = {
        ...withJpeg,
        formats: { ...withJpeg.formats, largeWebp: 'https://assets.example/f/1/l.webp' },
      };
      expect(await pick({}, [withWebp])).toEqual(['https://assets.example/f/1/l.webp', 'largeWebp']);
      const pngOnly = { ...s.frontal_be, formats: { largePng: 'https://assets.example/f/1/l2.png' } };
      expect(await pick({}, [pngOnly])).toEqual(['https://assets.example/f/1/l2.png', 'largePng']);
    });

    it('knows every extra key: mediumJpeg, largePng, hugePng; an explicit jpeg name never takes a png key', async () => {
      expect(await pick({ formats: ['mediumJpeg'] })).toEqual(['https://assets.example/f/1/m.jpg', 'mediumJpeg']);
      expect(await pick({ formats: ['hugePng'] })).toEqual(['https://assets.example/f/1/h2.png', 'hugePng']);
      expect(await pick({ formats: ['largePng'] })).toEqual(['https://assets.example/f/1/l2.png', 'largePng']);
      expect(await pick({ formats: ['largeJpg'] })).toEqual([null, null]);
      expect(await pick({ formats: ['hugeWebp'], fallback: 'any' })).toEqual([
        'https://assets.example/f/1/h.png',
        'huge',
      ]);
    });

    it('a frontal media record (type: frontal) uses the frontal keys', async () => {
      const [m] = await run(
        [s.frontal_be],
        selectMediaFormat(
          { formats: ['mediumJpeg'] },
          context({ source: { type: 'media.stream', resource: 'media' } }),
        ),
      );
      expect([m.url, m.format]).toEqual(['https://assets.example/f/1/m.jpg', 'mediumJpeg']);
    });
  });
});
