// The characters that change how text is shown rather than being shown, written once. Text from a
// sample or a guest (file names, command lines, domains, headers, log lines) may carry them to
// disguise itself: `invoice\u202Egpj.exe` reads "invoiceexe.jpg" wherever the override is applied.
// Every place that shows or names such text finds them with this set; what it then does (draw a
// marker, escape, replace, refuse) is its own affair and stays there.
//
// The set is Unicode's, by property, not a list of code points that ages:
//   Cc   controls: C0 (U+0000–001F), DEL, C1 (U+0080–009F, CSI and NEL among them)
//   Cf   format characters: bidi embeddings, overrides, isolates and marks (LRE…RLO, LRI…PDI, LRM,
//        RLM, ALM), zero-width space/joiners, word joiner, invisible operators, the BOM, soft
//        hyphen, interlinear annotations, tag characters (U+E0000 block), the Arabic and Syriac
//        prepended marks
//   Zl Zp the line and paragraph separators (U+2028, U+2029)
//   Default_Ignorable_Code_Point  what a renderer draws as nothing though it is not Cf: Hangul
//        fillers (U+115F, U+1160, U+3164, U+FFA0), variation selectors (U+FE00–FE0F, U+E0100–
//        E01EF), Mongolian free variation selectors, the combining grapheme joiner (U+034F)
//   Cs   a surrogate that is not half of a pair (never a character; a pair is matched whole)
// Not in the set: spaces of other widths (NBSP, U+2000–200A, U+3000) are seen as spaces; private
// use (Co) and unassigned (Cn) code points are drawn as boxes; combining marks are drawn. The
// emoji joiners (ZWJ, VS16) are in it: an emoji sequence is shown with its markers, a fair price
// for never hiding one. The properties are those of the running engine's Unicode version (Node's
// ICU, Chromium's): a format character added by Unicode joins the set when the engine learns it.

const CLASS = '[\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}\\p{Default_Ignorable_Code_Point}\\p{Cs}]'

/** One invisible character (a code point: astral ones are matched whole). Not global: safe to `test`. */
export const INVISIBLE = new RegExp(CLASS, 'u')

/** A fresh global regular expression of the set, for `replace`/`matchAll` (each has its own lastIndex). */
export function invisibleGlobal(): RegExp {
  return new RegExp(CLASS, 'gu')
}

const GLOBAL = invisibleGlobal()

export function hasInvisible(text: string): boolean {
  return INVISIBLE.test(text)
}

export function isInvisible(codePoint: number): boolean {
  return INVISIBLE.test(String.fromCodePoint(codePoint))
}

/** `text` with each invisible character replaced by what `by` makes of it (its code point and itself). */
export function replaceInvisible(text: string, by: (codePoint: number, char: string) => string): string {
  // The global expression's lastIndex is reset by replace itself, so one shared instance is safe.
  return text.replace(GLOBAL, (c) => by(c.codePointAt(0) ?? 0, c))
}

/** "U+202E" (four hex digits at least, upper case). */
export function codePointLabel(codePoint: number): string {
  return `U+${codePoint.toString(16).toUpperCase().padStart(4, '0')}`
}

// Short names an analyst recognises, for the characters that come up; the others are shown by code point.
const NAMES: Record<number, string> = {
  0x00: 'NUL', 0x09: 'TAB', 0x0a: 'LF', 0x0d: 'CR', 0x1b: 'ESC', 0x7f: 'DEL',
  0x061c: 'ALM', 0x200b: 'ZWSP', 0x200c: 'ZWNJ', 0x200d: 'ZWJ', 0x200e: 'LRM', 0x200f: 'RLM',
  0x202a: 'LRE', 0x202b: 'RLE', 0x202c: 'PDF', 0x202d: 'LRO', 0x202e: 'RLO',
  0x2066: 'LRI', 0x2067: 'RLI', 0x2068: 'FSI', 0x2069: 'PDI', 0xfeff: 'BOM'
}

/** "RLO", "ZWSP"…, or the code point label ("U+E0041") for a character without a short name. */
export function invisibleName(codePoint: number): string {
  return NAMES[codePoint] ?? codePointLabel(codePoint)
}
