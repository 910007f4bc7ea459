// The fixed words and reference lists the sandbox generators draw from:
// locales, active ingredients, dosage forms, category trees, brand name parts.
// Kept apart from the generators so the data's flavour can change without
// touching generation logic. Localized entries list en, nl, fr, de in that order
// (the generators drop some locales on purpose: real records miss translations).

export const LOCALES = ['en', 'nl', 'fr', 'de'] as const;
export type Locale = (typeof LOCALES)[number];

/** Bit of a locale in a locale mask (en=1, nl=2, fr=4, de=8). */
export function localeBit(locale: string): number {
  const i = (LOCALES as readonly string[]).indexOf(locale);
  return i < 0 ? 0 : 1 << i;
}

type Words = readonly [en: string, nl: string, fr: string, de: string];

/** `{en, nl, ...}` for the locales set in `mask`, built by `text(localeIndex)`. */
export function localized(mask: number, text: (locale: number) => string): Record<string, string> {
  const out: Record<string, string> = {};
  for (let l = 0; l < LOCALES.length; l++) if (mask & (1 << l)) out[LOCALES[l]!] = text(l);
  return out;
}

export function words(w: Words, mask = 0b1111): Record<string, string> {
  return localized(mask, (l) => w[l]!);
}

export interface IngredientWords {
  name: Words;
  atc: string;
  unit: string;
  strengths: readonly number[];
  cannabis?: boolean;
  veterinary?: boolean;
  biocide?: boolean;
}

export const ACTIVE_INGREDIENTS: readonly IngredientWords[] = [
  {
    name: ['Paracetamol', 'Paracetamol', 'Paracétamol', 'Paracetamol'],
    atc: 'N02BE01',
    unit: 'mg',
    strengths: [120, 250, 500, 1000],
  },
  { name: ['Ibuprofen', 'Ibuprofen', 'Ibuprofène', 'Ibuprofen'], atc: 'M01AE01', unit: 'mg', strengths: [200, 400] },
  {
    name: ['Amoxicillin', 'Amoxicilline', 'Amoxicilline', 'Amoxicillin'],
    atc: 'J01CA04',
    unit: 'mg',
    strengths: [250, 500, 1000],
  },
  { name: ['Cetirizine', 'Cetirizine', 'Cétirizine', 'Cetirizin'], atc: 'R06AE07', unit: 'mg', strengths: [10] },
  { name: ['Loratadine', 'Loratadine', 'Loratadine', 'Loratadin'], atc: 'R06AX13', unit: 'mg', strengths: [10] },
  { name: ['Omeprazole', 'Omeprazol', 'Oméprazole', 'Omeprazol'], atc: 'A02BC01', unit: 'mg', strengths: [10, 20, 40] },
  {
    name: ['Vitamin C', 'Vitamine C', 'Vitamine C', 'Vitamin C'],
    atc: 'A11GA01',
    unit: 'mg',
    strengths: [250, 500, 1000],
  },
  {
    name: ['Vitamin D3', 'Vitamine D3', 'Vitamine D3', 'Vitamin D3'],
    atc: 'A11CC05',
    unit: 'IU',
    strengths: [400, 1000, 2000],
  },
  { name: ['Magnesium', 'Magnesium', 'Magnésium', 'Magnesium'], atc: 'A12CC', unit: 'mg', strengths: [150, 300] },
  { name: ['Zinc', 'Zink', 'Zinc', 'Zink'], atc: 'A12CB01', unit: 'mg', strengths: [15, 25] },
  { name: ['Melatonin', 'Melatonine', 'Mélatonine', 'Melatonin'], atc: 'N05CH01', unit: 'mg', strengths: [1, 3, 5] },
  { name: ['Iron', 'IJzer', 'Fer', 'Eisen'], atc: 'B03AA07', unit: 'mg', strengths: [14, 65] },
  {
    name: ['Folic acid', 'Foliumzuur', 'Acide folique', 'Folsäure'],
    atc: 'B03BB01',
    unit: 'µg',
    strengths: [400, 800],
  },
  { name: ['Caffeine', 'Cafeïne', 'Caféine', 'Koffein'], atc: 'N06BC01', unit: 'mg', strengths: [50, 100] },
  {
    name: ['Hyaluronic acid', 'Hyaluronzuur', 'Acide hyaluronique', 'Hyaluronsäure'],
    atc: 'S01KA01',
    unit: 'mg/ml',
    strengths: [1, 2],
  },
  {
    name: ['Xylometazoline', 'Xylometazoline', 'Xylométazoline', 'Xylometazolin'],
    atc: 'R01AA07',
    unit: 'mg/ml',
    strengths: [0.5, 1],
  },
  { name: ['Diclofenac', 'Diclofenac', 'Diclofénac', 'Diclofenac'], atc: 'M02AA15', unit: '%', strengths: [1, 2] },
  { name: ['Aciclovir', 'Aciclovir', 'Aciclovir', 'Aciclovir'], atc: 'D06BB03', unit: '%', strengths: [5] },
  {
    name: ['Hydrocortisone', 'Hydrocortison', 'Hydrocortisone', 'Hydrocortison'],
    atc: 'D07AA02',
    unit: '%',
    strengths: [0.5, 1],
  },
  { name: ['Salbutamol', 'Salbutamol', 'Salbutamol', 'Salbutamol'], atc: 'R03AC02', unit: 'µg', strengths: [100] },
  { name: ['Lidocaine', 'Lidocaïne', 'Lidocaïne', 'Lidocain'], atc: 'N01BB02', unit: '%', strengths: [2, 5] },
  {
    name: ['Chlorhexidine', 'Chloorhexidine', 'Chlorhexidine', 'Chlorhexidin'],
    atc: 'D08AC02',
    unit: '%',
    strengths: [0.12, 0.2],
  },
  { name: ['Echinacea', 'Echinacea', 'Échinacée', 'Sonnenhut'], atc: 'L03AX', unit: 'mg', strengths: [100, 400] },
  { name: ['Valerian', 'Valeriaan', 'Valériane', 'Baldrian'], atc: 'N05CM09', unit: 'mg', strengths: [300, 450] },
  { name: ['Omega-3', 'Omega-3', 'Oméga-3', 'Omega-3'], atc: 'C10AX06', unit: 'mg', strengths: [500, 1000] },
  {
    name: ['Coenzyme Q10', 'Co-enzym Q10', 'Coenzyme Q10', 'Coenzym Q10'],
    atc: 'C01EB09',
    unit: 'mg',
    strengths: [30, 100],
  },
  {
    name: ['Cannabidiol', 'Cannabidiol', 'Cannabidiol', 'Cannabidiol'],
    atc: 'N03AX24',
    unit: 'mg/ml',
    strengths: [25, 50, 100],
    cannabis: true,
  },
  {
    name: ['Δ9-Tetrahydrocannabinol', 'Δ9-Tetrahydrocannabinol', 'Δ9-Tétrahydrocannabinol', 'Δ9-Tetrahydrocannabinol'],
    atc: 'A04AD10',
    unit: 'mg/ml',
    strengths: [2.5, 10],
    cannabis: true,
  },
  {
    name: ['Ivermectin', 'Ivermectine', 'Ivermectine', 'Ivermectin'],
    atc: 'QP54AA01',
    unit: 'mg',
    strengths: [3, 6],
    veterinary: true,
  },
  {
    name: ['Fipronil', 'Fipronil', 'Fipronil', 'Fipronil'],
    atc: 'QP53AX15',
    unit: 'mg',
    strengths: [50, 134],
    veterinary: true,
  },
  {
    name: ['Sodium hypochlorite', 'Natriumhypochloriet', 'Hypochlorite de sodium', 'Natriumhypochlorit'],
    atc: 'D08AX07',
    unit: '%',
    strengths: [0.5, 1],
    biocide: true,
  },
  { name: ['Ethanol', 'Ethanol', 'Éthanol', 'Ethanol'], atc: 'D08AX08', unit: '%', strengths: [70, 80], biocide: true },
];

export interface FormWords {
  name: Words;
  packagingUnit: string;
  packContent: readonly number[];
  contentUnit: string;
  cannabisForm?: string;
}

export const DOSAGE_FORMS: readonly FormWords[] = [
  {
    name: ['tablets', 'tabletten', 'comprimés', 'Tabletten'],
    packagingUnit: 'box',
    packContent: [10, 20, 30, 60, 100],
    contentUnit: 'tablets',
    cannabisForm: 'tablet',
  },
  {
    name: ['capsules', 'capsules', 'gélules', 'Kapseln'],
    packagingUnit: 'box',
    packContent: [30, 60, 90],
    contentUnit: 'capsules',
    cannabisForm: 'capsule',
  },
  {
    name: ['syrup', 'siroop', 'sirop', 'Sirup'],
    packagingUnit: 'bottle',
    packContent: [100, 150, 200],
    contentUnit: 'ml',
  },
  { name: ['cream', 'crème', 'crème', 'Creme'], packagingUnit: 'tube', packContent: [15, 30, 50], contentUnit: 'g' },
  { name: ['gel', 'gel', 'gel', 'Gel'], packagingUnit: 'tube', packContent: [50, 100], contentUnit: 'g' },
  {
    name: ['drops', 'druppels', 'gouttes', 'Tropfen'],
    packagingUnit: 'bottle',
    packContent: [10, 15, 30],
    contentUnit: 'ml',
  },
  {
    name: ['spray', 'spray', 'spray', 'Spray'],
    packagingUnit: 'bottle',
    packContent: [10, 20, 50],
    contentUnit: 'ml',
    cannabisForm: 'spray',
  },
  {
    name: ['oil', 'olie', 'huile', 'Öl'],
    packagingUnit: 'bottle',
    packContent: [10, 30],
    contentUnit: 'ml',
    cannabisForm: 'oil',
  },
  {
    name: ['lozenges', 'zuigtabletten', 'pastilles', 'Lutschtabletten'],
    packagingUnit: 'box',
    packContent: [16, 24, 36],
    contentUnit: 'lozenges',
    cannabisForm: 'lozenge',
  },
  {
    name: ['gummies', 'gummies', 'gommes', 'Fruchtgummis'],
    packagingUnit: 'jar',
    packContent: [30, 60],
    contentUnit: 'gummies',
    cannabisForm: 'gummy',
  },
  { name: ['ointment', 'zalf', 'pommade', 'Salbe'], packagingUnit: 'tube', packContent: [20, 50], contentUnit: 'g' },
  {
    name: ['solution', 'oplossing', 'solution', 'Lösung'],
    packagingUnit: 'bottle',
    packContent: [250, 500, 1000],
    contentUnit: 'ml',
  },
  {
    name: ['dried flower', 'gedroogde bloem', 'fleur séchée', 'getrocknete Blüten'],
    packagingUnit: 'jar',
    packContent: [5, 10, 15],
    contentUnit: 'g',
    cannabisForm: 'flower',
  },
];

/** Category topics: the catalog and public category trees are both built from these. */
export const CATEGORY_TREE: readonly {
  name: Words;
  type: 'medicine' | 'veterinary_medicine' | 'non_medical';
  children: readonly Words[];
}[] = [
  {
    name: ['Pain & fever', 'Pijn & koorts', 'Douleur & fièvre', 'Schmerz & Fieber'],
    type: 'medicine',
    children: [
      ['Headache', 'Hoofdpijn', 'Maux de tête', 'Kopfschmerzen'],
      ['Muscle & joint pain', 'Spier- & gewrichtspijn', 'Douleurs musculaires', 'Muskel- & Gelenkschmerzen'],
      ['Children', 'Kinderen', 'Enfants', 'Kinder'],
    ],
  },
  {
    name: ['Cold & flu', 'Verkoudheid & griep', 'Rhume & grippe', 'Erkältung & Grippe'],
    type: 'medicine',
    children: [
      ['Nasal sprays', 'Neussprays', 'Sprays nasaux', 'Nasensprays'],
      ['Sore throat', 'Keelpijn', 'Maux de gorge', 'Halsschmerzen'],
      ['Cough', 'Hoest', 'Toux', 'Husten'],
    ],
  },
  {
    name: ['Allergy', 'Allergie', 'Allergie', 'Allergie'],
    type: 'medicine',
    children: [
      ['Hay fever', 'Hooikoorts', 'Rhume des foins', 'Heuschnupfen'],
      ['Eye drops', 'Oogdruppels', 'Gouttes oculaires', 'Augentropfen'],
    ],
  },
  {
    name: ['Digestive health', 'Spijsvertering', 'Digestion', 'Verdauung'],
    type: 'medicine',
    children: [
      ['Heartburn', 'Maagzuur', 'Brûlures d’estomac', 'Sodbrennen'],
      ['Probiotics', 'Probiotica', 'Probiotiques', 'Probiotika'],
    ],
  },
  {
    name: ['Vitamins & minerals', 'Vitaminen & mineralen', 'Vitamines & minéraux', 'Vitamine & Mineralstoffe'],
    type: 'non_medical',
    children: [
      ['Multivitamins', 'Multivitaminen', 'Multivitamines', 'Multivitamine'],
      ['Vitamin D', 'Vitamine D', 'Vitamine D', 'Vitamin D'],
      ['Sleep & relaxation', 'Slaap & ontspanning', 'Sommeil & détente', 'Schlaf & Entspannung'],
      ['Pregnancy', 'Zwangerschap', 'Grossesse', 'Schwangerschaft'],
    ],
  },
  {
    name: ['Skin care', 'Huidverzorging', 'Soins de la peau', 'Hautpflege'],
    type: 'non_medical',
    children: [
      ['Eczema', 'Eczeem', 'Eczéma', 'Ekzem'],
      ['Cold sores', 'Koortslip', 'Boutons de fièvre', 'Lippenherpes'],
      ['Sun care', 'Zonbescherming', 'Protection solaire', 'Sonnenschutz'],
    ],
  },
  {
    name: ['Medicinal cannabis', 'Medicinale cannabis', 'Cannabis médical', 'Medizinisches Cannabis'],
    type: 'medicine',
    children: [
      ['CBD oils', 'CBD-oliën', 'Huiles CBD', 'CBD-Öle'],
      ['THC products', 'THC-producten', 'Produits THC', 'THC-Produkte'],
    ],
  },
  {
    name: ['Veterinary', 'Diergeneeskunde', 'Vétérinaire', 'Tiermedizin'],
    type: 'veterinary_medicine',
    children: [
      ['Fleas & ticks', 'Vlooien & teken', 'Puces & tiques', 'Flöhe & Zecken'],
      ['Worming', 'Ontworming', 'Vermifuges', 'Entwurmung'],
    ],
  },
  {
    name: ['Hygiene & disinfection', 'Hygiëne & desinfectie', 'Hygiène & désinfection', 'Hygiene & Desinfektion'],
    type: 'non_medical',
    children: [
      ['Hand sanitiser', 'Handgel', 'Gel hydroalcoolique', 'Händedesinfektion'],
      ['Surface disinfection', 'Oppervlaktedesinfectie', 'Désinfection des surfaces', 'Flächendesinfektion'],
    ],
  },
];

export const GS1_CATEGORIES: readonly { code: string; level: number; parent: string | null; title: string }[] = [
  { code: '51000000', level: 1, parent: null, title: 'Healthcare' },
  { code: '51100000', level: 2, parent: '51000000', title: 'Pharmaceutical Drugs' },
  { code: '51101600', level: 3, parent: '51100000', title: 'Pharmaceutical Drugs - Prescription' },
  { code: '51101700', level: 3, parent: '51100000', title: 'Pharmaceutical Drugs - Non Prescription' },
  { code: '10000000', level: 1, parent: null, title: 'Beauty/Personal Care/Hygiene' },
  { code: '10000450', level: 2, parent: '10000000', title: 'Skin Products' },
  { code: '10000457', level: 3, parent: '10000450', title: 'Skin Care – Medicated' },
  { code: '50000000', level: 1, parent: null, title: 'Food/Beverage/Tobacco' },
  { code: '50250000', level: 2, parent: '50000000', title: 'Health Supplements' },
  { code: '50251500', level: 3, parent: '50250000', title: 'Vitamins/Minerals/Nutritional Supplements' },
  { code: '10005800', level: 2, parent: '10000000', title: 'Pet Care/Food' },
  { code: '10005845', level: 3, parent: '10005800', title: 'Pet Health – Parasite Control' },
];

export const ALLOWED_SPECIES: readonly {
  id: number;
  code: 'human' | 'veterinary' | 'surface_maintenance' | 'phytopharmacy';
  name: Words;
}[] = [
  { id: 1, code: 'human', name: ['Human', 'Mens', 'Humain', 'Mensch'] },
  { id: 2, code: 'veterinary', name: ['Veterinary', 'Dier', 'Vétérinaire', 'Tier'] },
  {
    id: 3,
    code: 'surface_maintenance',
    name: ['Surface maintenance', 'Oppervlakteonderhoud', 'Entretien des surfaces', 'Oberflächenpflege'],
  },
  { id: 4, code: 'phytopharmacy', name: ['Phytopharmacy', 'Fytofarmacie', 'Phytopharmacie', 'Phytopharmazie'] },
];

export const DIETARY_RESTRICTIONS: readonly { id: string; name: Words }[] = [
  { id: 'gluten_free', name: ['Gluten free', 'Glutenvrij', 'Sans gluten', 'Glutenfrei'] },
  { id: 'lactose_free', name: ['Lactose free', 'Lactosevrij', 'Sans lactose', 'Laktosefrei'] },
  { id: 'vegan', name: ['Vegan', 'Veganistisch', 'Végan', 'Vegan'] },
  { id: 'vegetarian', name: ['Vegetarian', 'Vegetarisch', 'Végétarien', 'Vegetarisch'] },
  { id: 'sugar_free', name: ['Sugar free', 'Suikervrij', 'Sans sucre', 'Zuckerfrei'] },
  { id: 'halal', name: ['Halal', 'Halal', 'Halal', 'Halal'] },
];

export const COLORS: readonly { id: string; name: Words }[] = [
  { id: 'white', name: ['White', 'Wit', 'Blanc', 'Weiß'] },
  { id: 'blue', name: ['Blue', 'Blauw', 'Bleu', 'Blau'] },
  { id: 'red', name: ['Red', 'Rood', 'Rouge', 'Rot'] },
  { id: 'green', name: ['Green', 'Groen', 'Vert', 'Grün'] },
  { id: 'yellow', name: ['Yellow', 'Geel', 'Jaune', 'Gelb'] },
  { id: 'transparent', name: ['Transparent', 'Transparant', 'Transparent', 'Transparent'] },
];

export const BRAND_PREFIXES = [
  'Pharma',
  'Medi',
  'Vita',
  'Natur',
  'Cura',
  'Sana',
  'Ølgaard',
  'Δelta',
  'Björk',
  'Épi',
  'Zen',
  'Apo',
  'Bio',
  'Derma',
  'Nordic ',
  'Green ',
  'Blue ',
  'Ōmi',
  'Sól',
  'Aurum ',
  'Kinder',
  'Herba',
  'Calm',
  'Flora',
  'Ocean ',
  'Alpen',
  'Terra',
  'Lumi',
] as const;
export const BRAND_SUFFIXES = [
  'lab',
  'care',
  'med',
  ' Health',
  'pharm',
  ' Naturals',
  'vita',
  ' Rx',
  'derm',
  'ica',
  ' & Co',
  'plus',
] as const;
export const COMPANY_FORMS = ['Pty Ltd', 'B.V.', 'S.A.', 'GmbH', 'Ltd', 'N.V.'] as const;

export const CITIES: readonly { city: string; region: string; regionLabel: string; country: string; zip: string }[] = [
  { city: 'Sydney', region: 'AU-NSW', regionLabel: 'New South Wales', country: 'AU', zip: '2000' },
  { city: 'Melbourne', region: 'AU-VIC', regionLabel: 'Victoria', country: 'AU', zip: '3000' },
  { city: 'Brisbane', region: 'AU-QLD', regionLabel: 'Queensland', country: 'AU', zip: '4000' },
  { city: 'Antwerpen', region: 'BE-VAN', regionLabel: 'Antwerpen', country: 'BE', zip: '2000' },
  { city: 'Liège', region: 'BE-WLG', regionLabel: 'Liège', country: 'BE', zip: '4000' },
  { city: 'Utrecht', region: 'NL-UT', regionLabel: 'Utrecht', country: 'NL', zip: '3511' },
  { city: 'München', region: 'DE-BY', regionLabel: 'Bayern', country: 'DE', zip: '80331' },
  { city: 'Zürich', region: 'CH-ZH', regionLabel: 'Zürich', country: 'CH', zip: '8001' },
];

export const STRAINS = [
  'Northern Lights',
  'Blue Dream',
  'Sour Diesel',
  'Girl Scout Cookies',
  'Durban Poison',
  'Harlequin',
  'ACDC',
  'Jack Herer',
  'Gorilla Glue',
  'Pineapple Express',
] as const;

export const TARGET_GROUPS = ['public', 'pharmacist', 'professional'] as const;
export const VISIBLE_SIDES = ['front', 'back', 'left', 'right', 'top', 'bottom'] as const;
export const DESCRIPTION_TYPES = ['general', 'usage', 'composition', 'warnings'] as const;
export const CORRECTION_TYPES = [
  'wrong_name',
  'wrong_photo',
  'wrong_price',
  'wrong_ean',
  'missing_information',
  'other',
] as const;
export const CORRECTION_TEXTS: Words = [
  'The pack shown is the old design; please update the photo.',
  'De verpakking op de foto is het oude ontwerp.',
  'Le prix affiché ne correspond pas au prix conseillé — à vérifier.',
  'Die Packungsgröße stimmt nicht: 30 statt 20 Stück.',
];
export const NEWS_MEDIA_TYPES = ['image', 'video', 'pdf'] as const;
export const LINK_TITLES = [
  'Patient information',
  'Product website',
  'Instruction video',
  'Safety data sheet',
] as const;
export const CONSERVATION_LABELS: Record<string, string> = {
  room: 'Store below 25 °C',
  refrigerator: 'Store at 2–8 °C',
  fresh: 'Keep cool, 8–15 °C',
  frozen: 'Store at or below −18 °C',
};

// What the live service is observed to send (issue 11), beyond the spec's lists.
export const LIVE_TARGET_GROUPS = [
  'public',
  'pharmacist',
  'doctor',
  'homecare',
  'hospital',
  'nurse',
  'physiotherapist',
  'webshop',
] as const;
export const LIVE_DESCRIPTION_TYPES = [
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
] as const;
export const DESCRIPTION_TAGS = ['user_generated', 'system_generated'] as const;
export const LIVE_CORRECTION_TYPES = ['missing_photo', 'wrong_description', 'wrong_photo'] as const;
/** Both of the spec's status lists (corrections endpoint and correction record) appear in live data. */
export const LIVE_CORRECTION_STATUSES = ['open', 'in_progress', 'handled', 'solved', 'closed'] as const;
export const LIVE_CONSERVATION_LABELS: Record<string, Words> = {
  room: ['Room temperature', 'Kamertemperatuur', 'Température ambiante', 'Raumtemperatur'],
  refrigerator: ['Refrigerator (2-8 °C)', 'Koelkast (2-8 °C)', 'Réfrigérateur (2-8 °C)', 'Kühlschrank (2-8 °C)'],
  fresh: ['Keep cool', 'Koel bewaren', 'Conserver au frais', 'Kühl lagern'],
  frozen: ['Freezer', 'Diepvries', 'Congélateur', 'Gefrierschrank'],
};
/** Celsius ranges the live records state for each conservation. */
export const CONSERVATION_RANGES: Record<string, readonly [number, number]> = {
  room: [15, 25],
  refrigerator: [2, 8],
  fresh: [8, 15],
  frozen: [-25, -18],
};
