// The facts of a product that only the live profiles (au, be, de, fr, us) have: its
// regional codes and which observed shapes it takes. They are drawn from their
// own random stream (SALT.live), after the spec facts, so the `spec` profile's
// draws and bytes do not change; the shapes of issue 24 from another one
// (SALT.liveSecondLook), so issue 11's draws do not change either.
import { type SandboxProfile, LATE_FIELDS } from './profiles.js';
import { rngFor } from './random.js';
import { SALT } from './timeline.js';

export interface LiveFacts {
  /** `ean[]` also holds the 12-digit UPC and its 13-digit zero-padded form. */
  upcInEan: boolean;
  /** Measures in kg/cm floats (only from LATE_FIELDS.floatMeasure on) rather than g/mm integers. */
  floatMeasures: boolean;
  /** Sends conservationMin/Max (cold products always do). */
  conservationRange: boolean;
  /** Also states Fahrenheit beside Celsius. */
  fahrenheit: boolean;
  /** Index into the region's VAT rates. */
  vat: number;
  descriptionTypes: [number, number];
  descriptionTags: [number, number];
  // be
  cnk?: string;
  /** 1-based BCFI category, 0 when none (only from LATE_FIELDS.regional on). */
  bcfi: number;
  apbCategory?: string;
  // fr
  cipOrAcl7?: string;
  cip13?: string;
  acl13?: string;
  // de
  /** The PZN: 8 digits, the last a check digit (mod 11). */
  pzn?: string;
  // au
  gstApplicable?: boolean;
  snomedMpp?: string;
  snomedTpp?: string;
  snomedCtpp?: string;
  /** The shapes of issue 24 (drawSecondLook). */
  second: SecondLookFacts;
  /** A replaced product whose `ean` was emptied and GTIN fields nulled. */
  codesNulled?: boolean;
}

/** Zero-led 6-digit HS codes (chapters 01-09) as numbers, the form that loses the zero. */
export const ZERO_LED_HS_CODES = [30211, 40221, 90111, 71420, 51199, 21019] as const;

/** The shapes of issue 24 a live product takes; drawn whatever the region, used where it applies. */
export interface SecondLookFacts {
  /** A zero-led hsCode (index into ZERO_LED_HS_CODES) instead of the drawn one, -1 when none. */
  zeroLedHs: number;
  /** hsCode as a digit string with its zeros rather than an integer. */
  hsAsString: boolean;
  /** The deprecated `weight` in grams, a decimal on some (12.5); undefined when not sent. */
  weight?: number;
  /** A replaced product has its codes nulled (ean emptied, GTIN fields null). */
  nullCodes: boolean;
  /** `brands` as bare ids (one client). */
  bareBrandIds: boolean;
  /** `eanGtin13`/`eanGtin14` as lists of codes (one client). */
  codeLists: boolean;
  /** Carries the eanGtin14 of the product before it (a pack-level GTIN, a duplicate listing). */
  sharesGtin: boolean;
  // us (sparse)
  ndc?: string;
  isbn13?: string;
  isbn10?: string;
  routeOfAdministration?: string;
}

export const BCFI_CATEGORIES = 40;
/** The APB category codes public integrations filter on (docs/live-service.md, F2). */
export const APB_CATEGORIES = ['medical_device', 'homeopathy'] as const;
export const VAT_RATES: Record<Exclude<SandboxProfile, 'spec'>, readonly number[]> = {
  be: [0, 6, 21],
  fr: [0, 10],
  de: [0, 7, 19],
  au: [0, 10],
  // sales tax is a state's, not on the record
  us: [0],
};

const digits = (rng: ReturnType<typeof rngFor>, n: number): string => {
  let s = '';
  for (let k = 0; k < n; k++) s += String(rng.int(10));
  return s;
};

/** Regional facts of product `index`; `hasUpc` says whether it has an eanGtin12, `medicine` whether it is one. */
export function drawLiveFacts(
  seed: number,
  index: number,
  profile: Exclude<SandboxProfile, 'spec'>,
  hasUpc: boolean,
  medicine: boolean,
): LiveFacts {
  const rng = rngFor(seed, SALT.live, index);
  const late = index >= LATE_FIELDS.regional;
  const facts: LiveFacts = {
    upcInEan: hasUpc && rng.chance(0.5),
    floatMeasures: index >= LATE_FIELDS.floatMeasure && rng.chance(0.3),
    conservationRange: rng.chance(0.6),
    fahrenheit: rng.chance(0.2),
    vat: rng.int(VAT_RATES[profile].length),
    descriptionTypes: [rng.int(20), rng.int(20)],
    descriptionTags: [rng.int(2), rng.int(2)],
    bcfi: 0,
    second: drawSecondLook(seed, index),
  };
  // Codes are drawn whatever the region so a region's stream does not depend on another's.
  const cnk = `00${digits(rng, 5)}`;
  const bcfi = rng.chance(0.15) ? rng.between(1, BCFI_CATEGORIES) : 0;
  // String codes as the live service's apbCategory filter takes them (F2); two draws, as before.
  const apb = rng.chance(0.1) ? APB_CATEGORIES[(rng.int(4) + rng.between(1, 99)) % APB_CATEGORIES.length] : undefined;
  const cip7 = `34009${digits(rng, 2)}`;
  const cip13 = `34009${digits(rng, 8)}`;
  const acl13 = rng.chance(0.2) ? `340100${digits(rng, 7)}` : undefined;
  // SCTIDs in the Australian extension's namespace (1000168), as digit strings.
  const snomed = () => `${rng.between(1, 9)}${digits(rng, 5)}1000168${digits(rng, 3)}`;
  const mpp = rng.chance(0.3) ? snomed() : undefined;
  const tpp = rng.chance(0.25) ? snomed() : undefined;
  const ctpp = rng.chance(0.15) ? snomed() : undefined;
  const gst = rng.chance(0.4);
  // Drawn last, so the other regions' draws are those they had before the de profile.
  const pzn = pznOf(digits(rng, 7));
  const hasPzn = rng.chance(0.9);
  if (profile === 'be') {
    if (rng.chance(0.9)) facts.cnk = cnk;
    if (late) facts.bcfi = bcfi;
    if (apb) facts.apbCategory = apb;
  } else if (profile === 'fr') {
    if (rng.chance(0.85)) facts.cipOrAcl7 = cip7;
    if (medicine) facts.cip13 = cip13;
    if (late && acl13) facts.acl13 = acl13;
  } else if (profile === 'de') {
    if (hasPzn) facts.pzn = pzn;
  } else if (profile === 'au') {
    facts.gstApplicable = gst;
    if (mpp) facts.snomedMpp = mpp;
    if (tpp) facts.snomedTpp = tpp;
    if (late && ctpp) facts.snomedCtpp = ctpp;
  }
  return facts;
}

/**
 * A PZN from 7 digits and its check digit: the sum of each digit times its position (1..7) mod 11;
 * a body whose check would be 10 is not a PZN, so its last digit is moved on until it is one.
 */
export function pznOf(body: string): string {
  for (let bump = 0; ; bump++) {
    const b = body.slice(0, 6) + String((Number(body[6]) + bump) % 10);
    let sum = 0;
    for (let i = 0; i < 7; i++) sum += Number(b[i]) * (i + 1);
    if (sum % 11 !== 10) return b + String(sum % 11);
  }
}

/** The issue-24 shapes of product `index` (its own random stream: nothing else's draws change). */
export function drawSecondLook(seed: number, index: number): SecondLookFacts {
  const rng = rngFor(seed, SALT.liveSecondLook, index);
  const late = index >= LATE_FIELDS.regional;
  const zeroLedHs = rng.chance(0.25) ? rng.int(ZERO_LED_HS_CODES.length) : -1;
  const hsAsString = rng.chance(0.5);
  const grams = rng.between(10, 900);
  const decimal = rng.chance(0.4);
  const weight = rng.chance(0.6) ? (decimal ? grams + 0.5 : grams) : undefined;
  const facts: SecondLookFacts = {
    zeroLedHs,
    hsAsString,
    nullCodes: rng.chance(0.8),
    bareBrandIds: rng.chance(0.05),
    codeLists: rng.chance(0.04),
    sharesGtin: rng.chance(0.01),
  };
  if (weight !== undefined) facts.weight = weight;
  const ndc = `${digits(rng, 5)}-${digits(rng, 3)}-${digits(rng, 2)}`;
  const isbn = rng.chance(0.01);
  const isbnBody = `978${digits(rng, 9)}`;
  const route = rng.pick(['oral', 'topical', 'nasal', 'ophthalmic', 'inhalation'] as const);
  if (late && rng.chance(0.2)) facts.ndc = ndc;
  if (isbn) {
    facts.isbn13 = isbnBody + isbnCheck13(isbnBody);
    const body10 = isbnBody.slice(3);
    facts.isbn10 = body10 + isbnCheck10(body10);
  }
  if (rng.chance(0.1)) facts.routeOfAdministration = route;
  return facts;
}

function isbnCheck13(body: string): string {
  let sum = 0;
  for (let i = 0; i < 12; i++) sum += Number(body[i]) * (i % 2 ? 3 : 1);
  return String((10 - (sum % 10)) % 10);
}

function isbnCheck10(body: string): string {
  let sum = 0;
  for (let i = 0; i < 9; i++) sum += Number(body[i]) * (10 - i);
  const check = (11 - (sum % 11)) % 11;
  return check === 10 ? 'X' : String(check);
}
